"""An embedded SQLite store for one document's memory, and the block assembled from it.

Chapter summaries, entities, narrative threads and embeddings live in one SQLite file (the
standard library's ``sqlite3``; embeddings sit in TEXT columns in the wire format of
:mod:`membrane.longform.vector`). :meth:`LongformStore.memory_block` reads it and builds the
fixed-size block for the next chapter.

Durability and concurrency: the database runs in WAL mode, so one writer and any number of
readers (threads or processes, each with its own :class:`LongformStore`) work at once and a
reader sees whole transactions only. Every write method is one transaction, with
``synchronous=FULL``: a crash in the middle of a write loses that write and nothing else.
The schema carries a version (``PRAGMA user_version``) and is migrated forward on open.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.longform._checks import (
    check_chapter,
    check_chapter_or_zero,
    check_finite,
    check_limit,
    check_path,
    check_text,
    stored_text,
)
from membrane.longform._matrix import Document, VectorCache, VectorSet, new_owner
from membrane.longform.budget import (
    DEFAULT_MEMORY_BUDGET,
    BudgetResult,
    Fitted,
    SectionInput,
    SectionName,
    estimate_tokens,
    fit_sections,
    skeleton_chapters,
)
from membrane.longform.threads import (
    ThreadPlan,
    is_unresolved,
    select_known_threads,
)
from membrane.longform.vector import (
    DEFAULT_K,
    DEFAULT_MIN_SCORE,
    RELATIVE_FLOOR,
    ScoredRow,
    _candidates,
    _check_search_args,
    _numbers,
    _raw_bytes,
    _row_score,
    _select,
    _unit,
    decode_vector,
    encode_checked,
    numpy_available,
    search_top_k,
)

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = [
    "DEFAULT_BLOCK_LABELS",
    "DEFAULT_RECENT_CHAPTERS",
    "SCHEMA_VERSION",
    "BlockLabels",
    "ChapterSummary",
    "Entity",
    "LongformStore",
    "MemoryBlock",
    "StoredThread",
]

T = TypeVar("T")

#: Version of the database layout this code writes.
SCHEMA_VERSION: Final = 1

#: Chapters before the current one whose summaries form the recent section.
DEFAULT_RECENT_CHAPTERS: Final = 20

# Migration i brings a database from version i to version i + 1.
_MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS chapters (
        number    INTEGER PRIMARY KEY CHECK (number >= 1),
        title     TEXT NOT NULL DEFAULT '',
        summary   TEXT NOT NULL,
        embedding TEXT
    );
    CREATE TABLE IF NOT EXISTS entities (
        name               TEXT PRIMARY KEY,
        description        TEXT NOT NULL,
        importance         REAL NOT NULL DEFAULT 0,
        last_seen_chapter  INTEGER NOT NULL DEFAULT 0,
        first_seen_chapter INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS entities_by_importance
        ON entities (importance DESC, last_seen_chapter DESC, name);
    CREATE TABLE IF NOT EXISTS threads (
        id                     INTEGER PRIMARY KEY AUTOINCREMENT,
        summary                TEXT NOT NULL,
        status                 TEXT NOT NULL CHECK (status IN ('open', 'progressing', 'resolved')),
        thread_type            TEXT,
        opened_at_chapter      INTEGER NOT NULL,
        deadline_chapter       INTEGER NOT NULL DEFAULT 0,
        last_activated_chapter INTEGER NOT NULL,
        resolved_at_chapter    INTEGER,
        resolution_note        TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX IF NOT EXISTS threads_by_status ON threads (status);
    """,
)


@dataclass(frozen=True, slots=True)
class ChapterSummary:
    """One chapter's summary; ``embedding`` is in the wire format, or None."""

    number: int
    summary: str
    title: str = ""
    embedding: str | None = None


@dataclass(frozen=True, slots=True)
class Entity:
    """A character, place or object worth remembering; higher ``importance`` is kept first.

    ``first_seen_chapter`` keeps an entity out of the blocks of earlier chapters (0: unknown,
    always eligible).
    """

    name: str
    description: str
    importance: float = 0.0
    last_seen_chapter: int = 0
    first_seen_chapter: int = 0


@dataclass(frozen=True, slots=True)
class StoredThread:
    """A narrative thread as stored; ``id`` is what :class:`ThreadOp` refers to."""

    id: str
    summary: str
    status: str
    opened_at_chapter: int
    deadline_chapter: int
    last_activated_chapter: int
    thread_type: str | None = None
    resolved_at_chapter: int | None = None
    resolution_note: str = ""


@dataclass(frozen=True, slots=True)
class BlockLabels:
    """Headings and line formats of a rendered block; write them in the document's language."""

    entity: str = "## Characters, places and things"
    recent: str = "## The latest chapters"
    skeleton: str = "## The story so far"
    retrieval: str = "## Earlier chapters related to this one"
    chapter_line: str = "Ch.{number}: {summary}"
    entity_line: str = "{name}: {description}"

    def heading(self, section: SectionName) -> str:
        """The heading of one section."""
        heading: str = getattr(self, section)
        return heading


DEFAULT_BLOCK_LABELS: Final = BlockLabels()

# Rendering order: who is in play, the long arc, related callbacks, then the chapters right
# before the one being written, closest to where the model continues.
_RENDER_ORDER: Final[tuple[SectionName, ...]] = ("entity", "skeleton", "retrieval", "recent")


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """The assembled memory for one chapter, with the fit that produced it.

    ``result`` holds the kept items per section (recent and skeleton in chapter order);
    ``retrieval_scores`` maps each retrieved chapter to its similarity.
    """

    chapter: int
    recent_from: int
    skeleton_chapters: tuple[int, ...]
    result: BudgetResult
    labels: BlockLabels = DEFAULT_BLOCK_LABELS
    retrieval_scores: dict[int, float] = field(default_factory=dict)
    reserved_tokens: int = 0

    @property
    def used_tokens(self) -> int:
        """Tokens of the fitted items (headings are covered by ``reserved_tokens``)."""
        return self.result.used_tokens

    def render(self) -> str:
        """The block as text, one headed section per non-empty section."""
        parts = []
        for name in _RENDER_ORDER:
            fitted = self.result.section(name)
            if fitted.kept:
                parts.append(self.labels.heading(name) + "\n" + "".join(fitted.texts))
        return "\n".join(parts)


def _chapter(row: Sequence[Any]) -> ChapterSummary:
    """A chapters row as read back (text columns decoded even if stored as BLOBs)."""
    number, summary, title, embedding = row
    return ChapterSummary(number, stored_text(summary), stored_text(title), embedding)


def _entity(row: Sequence[Any]) -> Entity:
    name, description, *numbers = row
    return Entity(stored_text(name), stored_text(description), *numbers)


def _thread(row: Sequence[Any]) -> StoredThread:
    number, summary, status, opened, deadline, activated, kind, resolved, note = row
    return StoredThread(
        str(number),
        stored_text(summary),
        stored_text(status),
        opened,
        deadline,
        activated,
        kind,
        resolved,
        stored_text(note),
    )


def _chapter_row(chapter: ChapterSummary, prefix: str) -> tuple[int, str, str, str | None]:
    """(number, title, summary, embedding) of ``chapter``, every field checked."""
    return (
        check_chapter(chapter.number, f"{prefix}number"),
        check_text(chapter.title, f"{prefix}title"),
        check_text(chapter.summary, f"{prefix}summary"),
        _encoded(chapter.embedding, f"{prefix}embedding"),
    )


def _entity_row(entity: Entity, prefix: str) -> tuple[str, str, float, int, int]:
    name = check_text(entity.name, f"{prefix}name")
    if not name:
        raise InvalidInputError("an entity needs a non-empty name", field=f"{prefix}name")
    return (
        name,
        check_text(entity.description, f"{prefix}description"),
        check_finite(entity.importance, f"{prefix}importance"),
        check_chapter_or_zero(entity.last_seen_chapter, f"{prefix}last_seen_chapter"),
        check_chapter_or_zero(entity.first_seen_chapter, f"{prefix}first_seen_chapter"),
    )


def _encoded(embedding: Sequence[float] | str | None, field: str) -> str | None:
    if embedding is None:
        return None
    if isinstance(embedding, str):
        if decode_vector(embedding) is None:
            raise InvalidInputError(
                f"{field} is not a valid wire-format vector (base64 of little-endian float32)",
                field=field,
            )
        return embedding
    return encode_checked(embedding, field)


def _coarse_to_fine(count: int) -> list[int]:
    """Positions 0..count-1 ordered so that every prefix is spread over the whole range.

    The skeleton is trimmed from the tail of its importance order; in this order a trimmed
    skeleton still spans the document instead of losing its most recent part.
    """
    if count <= 0:
        return []
    order = [0]
    seen = {0}
    step = count
    while len(order) < count:
        step = max(1, step // 2)
        for position in range(0, count, step):
            if position not in seen:
                seen.add(position)
                order.append(position)
    return order


class LongformStore:
    """One document's memory in a SQLite file.

    Threads: one store may be shared by any number of threads. Every call takes the store's
    lock and runs as one transaction, so calls are serialised and none sees part of another's
    write. For reads that run in parallel, open one store per thread or process on the same
    file (WAL mode). Do not carry a store across ``fork()``; open a new one in the child.
    ``path=":memory:"`` gives a private in-memory database. An existing file of 0 bytes is
    refused (:class:`~membrane.errors.StoreUnavailable`): it is a store that lost its contents
    or a placeholder, and SQLite would silently start an empty store in it.

    With NumPy installed, :meth:`search` (and the retrieval of :meth:`memory_block`) keeps the
    decoded embeddings in ``vector_cache`` (a private :class:`VectorCache` by default), updates
    them in place on every write through this store, and reloads them when another connection
    has written to the file since.

    >>> with LongformStore(":memory:") as store:
    ...     store.put_chapter(1, "Mara signs on as first mate.")
    ...     store.get_chapter(1).summary
    'Mara signs on as first mate.'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 10.0,
        vector_cache: VectorCache | None = None,
    ) -> None:
        self._path = check_path(path)
        if check_finite(timeout, "timeout") < 0:
            raise InvalidInputError(f"timeout must be >= 0, got {timeout!r}", field="timeout")
        self._vectors = VectorCache() if vector_cache is None else vector_cache
        self._owner = new_owner()
        self._name = f"sqlite:{self._path}"
        self._lock = threading.RLock()
        _refuse_an_emptied_file(self._path, self._name)
        try:
            self._db = sqlite3.connect(
                self._path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot open the longform store at {self._path}: {exc}", store=self._name
            ) from exc
        try:
            with self._sqlite_errors("open"):
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute("PRAGMA foreign_keys=ON")
                self._migrate()
        except BaseException:
            self._db.close()
            raise

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _sqlite_errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"longform store {self._path}: {action} failed: {exc}", store=self._name
            ) from exc

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so two writers queue on busy_timeout instead
        # of failing when a read transaction tries to upgrade.
        with self._transaction(action, "BEGIN IMMEDIATE") as db:
            yield db

    @contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        # One read transaction: every query inside sees the same snapshot.
        with self._transaction(action, "BEGIN") as db:
            yield db

    @contextmanager
    def _transaction(self, action: str, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._sqlite_errors(action):
            self._db.execute(begin)
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _migrate(self) -> None:
        # Check without the write lock first: opening a current store must not wait for, or
        # block, a writer that is busy in another process.
        if self._version() == SCHEMA_VERSION:
            return
        with self._write("schema migration") as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[target - 1].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")

    def _version(self) -> int:
        with self._sqlite_errors("read schema version"):
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"{self._path} has schema version {version}, newer than this Membrane "
                f"supports ({SCHEMA_VERSION}); upgrade membrane-aol to open it",
                store=self._name,
            )
        return version

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self._lock:
            return self._version()

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        with self._lock:
            self._vectors.discard(self._owner)
            self._db.close()

    @property
    def vector_cache(self) -> VectorCache:
        """The cache holding this store's decoded embeddings."""
        return self._vectors

    def __enter__(self) -> LongformStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- chapters ---------------------------------------------------------------------------

    def put_chapter(
        self,
        number: int,
        summary: str,
        *,
        title: str = "",
        embedding: Sequence[float] | str | None = None,
    ) -> None:
        """Insert or replace one chapter's summary (and its embedding, encoded if needed)."""
        chapter = ChapterSummary(number, summary, title, _encoded(embedding, "embedding"))
        _chapter_row(chapter, "")  # checked here, so errors name the arguments of this call
        self.put_chapters([chapter])

    def put_chapters(self, chapters: Iterable[ChapterSummary]) -> int:
        """Insert or replace many summaries in one transaction; returns how many were written.

        Either all of them are stored or, if anything fails (including the iterable raising),
        none are.
        """

        written: list[tuple[int, str | None]] = []

        def rows() -> Iterator[tuple[int, str, str, str | None]]:
            for position, chapter in enumerate(chapters):
                if not isinstance(chapter, ChapterSummary):
                    raise InvalidInputError(
                        f"chapters[{position}] must be a ChapterSummary, got "
                        f"{type(chapter).__name__}",
                        field=f"chapters[{position}]",
                    )
                row = _chapter_row(chapter, f"chapters[{position}].")
                written.append((row[0], row[3]))
                yield row

        with self._lock:
            with self._write("write chapters") as db:
                # Read inside the write lock: a changed version means another connection wrote
                # since the matrices were loaded, and they cannot be patched, only reloaded.
                version = self._data_version(db)
                cursor = db.executemany(
                    "INSERT INTO chapters (number, title, summary, embedding) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (number) DO UPDATE SET title = excluded.title, "
                    "summary = excluded.summary, embedding = excluded.embedding",
                    rows(),
                )
                count = cursor.rowcount
            self._patch_vectors(version, written)
            return count

    # -- cached vectors ---------------------------------------------------------------------

    @staticmethod
    def _data_version(db: sqlite3.Connection) -> int:
        return int(db.execute("PRAGMA data_version").fetchone()[0])

    def _patch_vectors(self, version: int, written: Sequence[tuple[int, str | None]]) -> None:
        document = self._vectors.get(self._owner)
        if document is None:
            return
        if document.version != version:
            self._vectors.discard(self._owner)
            return
        for number, embedding in written:
            document.write(number, None if embedding is None else _raw_bytes(embedding))
        self._vectors.refit(self._owner)

    def _document(self, db: sqlite3.Connection) -> Document:
        """This store's matrices as of the current read transaction, loaded if needed."""
        version = self._data_version(db)
        document = self._vectors.get(self._owner)
        if document is not None and document.version == version:
            return document
        numbers: dict[int, list[int]] = {}
        chunks: dict[int, list[bytes]] = {}
        for number, embedding in db.execute(
            "SELECT number, embedding FROM chapters WHERE embedding IS NOT NULL ORDER BY number"
        ):
            raw = _raw_bytes(embedding)
            if raw is None:
                continue
            dim = len(raw) // 4
            numbers.setdefault(dim, []).append(number)
            chunks.setdefault(dim, []).append(raw)
        sets = {dim: VectorSet(dim, numbers[dim], b"".join(chunks[dim])) for dim in numbers}
        document = Document(version, sets)
        self._vectors.put(self._owner, document)
        return document

    def _search_cached(
        self,
        db: sqlite3.Connection,
        query: list[float],
        k: int,
        min_score: float,
        relative_floor: float,
        before_chapter: int | None,
        exclude: Iterable[int],
    ) -> list[tuple[int, float]]:
        """``(chapter, score)`` hits, exactly as :func:`search_top_k` ranks the same rows in
        chapter order: one float32 matrix-vector product, then the float64 re-score of every
        row that could still be a hit."""
        import numpy as np

        vectors = self._document(db).sets.get(len(query))
        if vectors is None or vectors.count == 0:
            return []
        matrix, norms, numbers = vectors.view()
        usable = np.ones(vectors.count, dtype=bool)
        if before_chapter is not None:
            usable &= numbers < before_chapter
        excluded = np.fromiter(exclude, dtype=np.int64)
        if excluded.size:
            usable &= ~np.isin(numbers, excluded)
        query32 = np.asarray(query, dtype=np.float32)
        allowed = np.flatnonzero(usable)
        if allowed.size == 0:
            return []
        if allowed.size * 2 < vectors.count:
            # Early chapters see only a small part of the book: score just those rows.
            chosen = allowed[
                _candidates(matrix[allowed], norms[allowed], query32, k, min_score, relative_floor)
            ]
        else:
            chosen = _candidates(matrix, norms, query32, k, min_score, relative_floor, usable)
        scored = []
        for position in chosen.tolist():
            score = _row_score(query, matrix[position].tolist())
            if not score < min_score:
                scored.append((int(numbers[position]), score))
        # Chapter order is the row order search_top_k sees, and so the order of equal scores.
        scored.sort()
        return _select(scored, k, relative_floor)

    def search(
        self,
        query: Sequence[float],
        *,
        k: int = DEFAULT_K,
        min_score: float = DEFAULT_MIN_SCORE,
        relative_floor: float = RELATIVE_FLOOR,
        before_chapter: int | None = None,
        exclude: Iterable[int] = (),
        use_numpy: bool | None = None,
    ) -> list[ScoredRow[ChapterSummary]]:
        """The stored chapters most similar to ``query``, best first.

        The same hits, order and scores as :func:`search_top_k` over the chapters with an
        embedding (in chapter order), restricted to those before ``before_chapter`` and not in
        ``exclude``. With NumPy (``use_numpy`` None or True) the decoded vectors stay cached
        between calls; ``use_numpy=False`` decodes every row in pure Python each time.
        """
        _check_search_args(k, min_score, relative_floor)
        query = _numbers(query, "query")
        excluded = sorted({check_chapter(number, "exclude") for number in exclude})
        if before_chapter is not None:
            check_chapter(before_chapter, "before_chapter")
        with self._read("search chapters") as db:
            hits = self._search_in(
                db, query, k, min_score, relative_floor, before_chapter, excluded, use_numpy
            )
            found = {c.number: c for c in self._chapters_in(db, sorted(n for n, _ in hits))}
        return [ScoredRow(row=found[number], score=score) for number, score in hits]

    def _search_in(
        self,
        db: sqlite3.Connection,
        query: Sequence[float],
        k: int,
        min_score: float,
        relative_floor: float,
        before_chapter: int | None,
        exclude: Sequence[int],
        use_numpy: bool | None,
    ) -> list[tuple[int, float]]:
        normalised = _unit(query)
        if k == 0 or not normalised:
            return []
        if use_numpy is None:
            use_numpy = numpy_available()
        elif use_numpy and not numpy_available():
            raise ModuleNotFoundError(
                "search(use_numpy=True) needs NumPy: pip install numpy, or pass use_numpy=None"
            )
        if use_numpy:
            return self._search_cached(
                db,
                normalised,
                k,
                float(min_score),
                float(relative_floor),
                before_chapter,
                exclude,
            )
        rows = db.execute(
            "SELECT number, embedding FROM chapters WHERE embedding IS NOT NULL AND number < ? "
            "ORDER BY number",
            (2**62 if before_chapter is None else before_chapter,),
        ).fetchall()
        skip = set(exclude)
        pool = [row for row in rows if row[0] not in skip]
        hits = search_top_k(
            query,
            pool,
            lambda row: row[1],
            k=k,
            min_score=min_score,
            relative_floor=relative_floor,
            use_numpy=False,
        )
        return [(hit.row[0], hit.score) for hit in hits]

    def get_chapter(self, number: int) -> ChapterSummary | None:
        """One chapter's summary, or None."""
        found = self.get_chapters([number])
        return found[0] if found else None

    def get_chapters(self, numbers: Iterable[int]) -> list[ChapterSummary]:
        """The stored summaries among ``numbers``, in ascending chapter order."""
        wanted = sorted({check_chapter(number, "number") for number in numbers})
        with self._read("read chapters") as db:
            return self._chapters_in(db, wanted)

    @staticmethod
    def _chapters_in(db: sqlite3.Connection, numbers: Sequence[int]) -> list[ChapterSummary]:
        found: list[ChapterSummary] = []
        # SQLite caps bound parameters (999 on old builds); stay under it.
        for start in range(0, len(numbers), 500):
            batch = numbers[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.extend(
                _chapter(row)
                for row in db.execute(
                    "SELECT number, summary, title, embedding FROM chapters "
                    f"WHERE number IN ({marks}) ORDER BY number",
                    batch,
                )
            )
        return found

    def iter_chapters(self) -> Iterator[ChapterSummary]:
        """Every stored summary in chapter order (read as one snapshot)."""
        with self._read("read chapters") as db:
            rows = db.execute(
                "SELECT number, summary, title, embedding FROM chapters ORDER BY number"
            ).fetchall()
        for row in rows:
            yield _chapter(row)

    def chapter_count(self) -> int:
        """How many chapters have a summary."""
        with self._read("count chapters") as db:
            return int(db.execute("SELECT COUNT(*) FROM chapters").fetchone()[0])

    def latest_chapter(self) -> int:
        """The highest chapter number stored, 0 when there is none."""
        with self._read("read latest chapter") as db:
            return int(db.execute("SELECT COALESCE(MAX(number), 0) FROM chapters").fetchone()[0])

    # -- entities ---------------------------------------------------------------------------

    def put_entity(
        self,
        name: str,
        description: str,
        *,
        importance: float = 0.0,
        last_seen_chapter: int = 0,
        first_seen_chapter: int = 0,
    ) -> None:
        """Insert or replace one entity."""
        entity = Entity(name, description, importance, last_seen_chapter, first_seen_chapter)
        _entity_row(entity, "")
        self.put_entities([entity])

    def put_entities(self, entities: Iterable[Entity]) -> int:
        """Insert or replace many entities in one transaction; returns how many were written."""

        def rows() -> Iterator[tuple[str, str, float, int, int]]:
            for position, entity in enumerate(entities):
                if not isinstance(entity, Entity):
                    raise InvalidInputError(
                        f"entities[{position}] must be an Entity, got {type(entity).__name__}",
                        field=f"entities[{position}]",
                    )
                yield _entity_row(entity, f"entities[{position}].")

        with self._write("write entities") as db:
            cursor = db.executemany(
                "INSERT INTO entities (name, description, importance, last_seen_chapter, "
                "first_seen_chapter) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "description = excluded.description, importance = excluded.importance, "
                "last_seen_chapter = excluded.last_seen_chapter, "
                "first_seen_chapter = excluded.first_seen_chapter",
                rows(),
            )
            return cursor.rowcount

    def entities(
        self, limit: int | None = None, *, before_chapter: int | None = None
    ) -> list[Entity]:
        """Entities, most important first (then most recently seen, then by name).

        ``before_chapter`` keeps only those first seen before that chapter (or never dated).
        """
        limit = check_limit(limit, "limit")
        if before_chapter is not None:
            check_chapter(before_chapter, "before_chapter")
        with self._read("read entities") as db:
            return self._entities(db, limit, before_chapter)

    @staticmethod
    def _entities(
        db: sqlite3.Connection, limit: int | None, before_chapter: int | None
    ) -> list[Entity]:
        return [
            _entity(row)
            for row in db.execute(
                "SELECT name, description, importance, last_seen_chapter, first_seen_chapter "
                "FROM entities WHERE first_seen_chapter < ? "
                "ORDER BY importance DESC, last_seen_chapter DESC, name LIMIT ?",
                (
                    2**62 if before_chapter is None else before_chapter,
                    -1 if limit is None else limit,
                ),
            )
        ]

    # -- threads ----------------------------------------------------------------------------

    def threads(self, *, unresolved_only: bool = False) -> list[StoredThread]:
        """Stored threads in id order; ``unresolved_only`` keeps those still owed a payoff."""
        with self._read("read threads") as db:
            rows = [
                _thread(row)
                for row in db.execute(
                    "SELECT id, summary, status, opened_at_chapter, deadline_chapter, "
                    "last_activated_chapter, thread_type, resolved_at_chapter, resolution_note "
                    "FROM threads ORDER BY id"
                )
            ]
        return [row for row in rows if is_unresolved(row.status)] if unresolved_only else rows

    def known_threads(self, chapter_number: int, *, limit: int | None = None) -> list[StoredThread]:
        """Unresolved threads in urgency order: render them and plan against the same list."""
        return select_known_threads(self.threads(), chapter_number, limit=limit)

    def apply_thread_plan(self, plan: ThreadPlan, chapter_number: int) -> list[str]:
        """Apply a :func:`plan_thread_ops` result in one transaction; returns the new ids."""
        check_chapter(chapter_number, "chapter_number")
        created: list[str] = []
        with self._write("apply thread plan") as db:
            for op in plan.ops:
                if op.kind == "open":
                    cursor = db.execute(
                        "INSERT INTO threads (summary, status, thread_type, opened_at_chapter, "
                        "deadline_chapter, last_activated_chapter) VALUES (?, 'open', ?, ?, ?, ?)",
                        (
                            op.summary,
                            op.thread_type,
                            chapter_number,
                            op.deadline_chapter,
                            chapter_number,
                        ),
                    )
                    created.append(str(cursor.lastrowid))
                    continue
                status = db.execute(
                    "SELECT status FROM threads WHERE id = ?", (self._thread_key(op.id),)
                ).fetchone()
                if status is None or not is_unresolved(status[0]):
                    raise InvalidInputError(
                        f"thread {op.id!r} is not an unresolved thread in this store; plan "
                        "against store.known_threads()",
                        field="plan",
                    )
                if op.kind == "progress":
                    db.execute(
                        "UPDATE threads SET status = 'progressing', last_activated_chapter = ? "
                        "WHERE id = ?",
                        (chapter_number, self._thread_key(op.id)),
                    )
                else:
                    db.execute(
                        "UPDATE threads SET status = 'resolved', last_activated_chapter = ?, "
                        "resolved_at_chapter = ?, resolution_note = ? WHERE id = ?",
                        (
                            chapter_number,
                            chapter_number,
                            op.resolution_note,
                            self._thread_key(op.id),
                        ),
                    )
        return created

    @staticmethod
    def _thread_key(thread_id: str | None) -> int:
        try:
            return int(str(thread_id))
        except ValueError:
            raise InvalidInputError(
                f"{thread_id!r} is not a thread id of this store", field="plan"
            ) from None

    # -- the block --------------------------------------------------------------------------

    def memory_block(
        self,
        chapter: int,
        *,
        total: int = DEFAULT_MEMORY_BUDGET,
        recent_chapters: int = DEFAULT_RECENT_CHAPTERS,
        query_embedding: Sequence[float] | None = None,
        k: int = DEFAULT_K,
        min_score: float = DEFAULT_MIN_SCORE,
        relative_floor: float = RELATIVE_FLOOR,
        entity_limit: int = 500,
        counter: TokenCounter | None = None,
        labels: BlockLabels = DEFAULT_BLOCK_LABELS,
        use_numpy: bool | None = None,
    ) -> MemoryBlock:
        """Assemble the memory block for writing ``chapter``, within ``total`` tokens.

        Recent: the ``recent_chapters`` summaries before ``chapter``, newest kept first.
        Skeleton: the summaries :func:`skeleton_chapters` names. Retrieval: when
        ``query_embedding`` is given (say, the embedding of the chapter's outline), the older
        chapters closest to it, excluding those already in the skeleton. Entities: the
        ``entity_limit`` most important among those first seen before ``chapter``: the block
        draws on nothing from ``chapter`` onwards. Headings are reserved out of ``total``, so
        the rendered text stays within it under the default estimate.
        """
        check_chapter(chapter, "chapter")
        check_limit(entity_limit, "entity_limit")
        if isinstance(total, bool) or not isinstance(total, int) or total < 1:
            raise InvalidInputError(f"total must be an int >= 1, got {total!r}", field="total")
        if isinstance(recent_chapters, bool) or not isinstance(recent_chapters, int):
            raise InvalidInputError("recent_chapters must be an int", field="recent_chapters")
        if recent_chapters < 0:
            raise InvalidInputError("recent_chapters must be >= 0", field="recent_chapters")
        _check_search_args(k, min_score, relative_floor)
        if query_embedding is not None:
            query_embedding = _numbers(query_embedding, "query_embedding")
        recent_from = max(1, chapter - recent_chapters)
        sampled = skeleton_chapters(chapter, recent_from)
        with self._read("assemble memory block") as db:
            recent = self._chapter_range(db, recent_from, chapter - 1)
            skeleton = self._chapters_in(db, sampled)
            entities = self._entities(db, entity_limit, chapter)
            scores: dict[int, float] = {}
            retrieved: list[ChapterSummary] = []
            if query_embedding is not None:
                hits = self._search_in(
                    db,
                    query_embedding,
                    k,
                    min_score,
                    relative_floor,
                    recent_from,
                    sampled,
                    use_numpy,
                )
                scores = dict(hits)
                found = {c.number: c for c in self._chapters_in(db, sorted(scores))}
                retrieved = [found[number] for number, _ in hits]

        def chapter_text(item: ChapterSummary) -> str:
            return labels.chapter_line.format(number=item.number, summary=item.summary) + "\n"

        def entity_text(item: Entity) -> str:
            return labels.entity_line.format(name=item.name, description=item.description) + "\n"

        reserved = estimate_tokens(
            "".join(labels.heading(name) + "\n\n" for name in _RENDER_ORDER), counter=counter
        )
        if reserved > total:
            raise InvalidInputError(
                f"total={total} cannot even hold the section headings ({reserved} tokens)",
                field="total",
            )
        ordered_skeleton = [skeleton[i] for i in _coarse_to_fine(len(skeleton))]
        result = fit_sections(
            entity=SectionInput(entities, entity_text),
            recent=SectionInput(list(reversed(recent)), chapter_text),
            skeleton=SectionInput(ordered_skeleton, chapter_text),
            retrieval=SectionInput(retrieved, chapter_text),
            total=total - reserved,
            counter=counter,
        )
        for name in ("recent", "skeleton"):
            result = result.with_section(name, _by_chapter(result.section(name)))
        return MemoryBlock(
            chapter=chapter,
            recent_from=recent_from,
            skeleton_chapters=tuple(sampled),
            result=result,
            labels=labels,
            retrieval_scores=scores,
            reserved_tokens=reserved,
        )

    @staticmethod
    def _chapter_range(db: sqlite3.Connection, first: int, last: int) -> list[ChapterSummary]:
        return [
            _chapter(row)
            for row in db.execute(
                "SELECT number, summary, title, embedding FROM chapters "
                "WHERE number BETWEEN ? AND ? ORDER BY number",
                (first, last),
            )
        ]


def _refuse_an_emptied_file(path: str, store: str) -> None:
    """Raise when ``path`` exists but is empty: SQLite would silently start a new store in it.

    A store file always holds at least its header page, so an empty one is a store that lost
    its contents (truncated by a crash, a full disk, a bad copy) or a placeholder someone made;
    either way starting afresh there would hide the loss.
    """
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        empty = os.path.getsize(path) == 0
    except OSError:  # absent: a new store is created
        return
    if empty:
        raise StoreUnavailable(
            f"{path} exists but is empty (0 bytes): a longform store that lost its contents, "
            "or a placeholder file. Restore it from a backup, or delete it (or pass a new "
            "path) to start a new store",
            store=store,
        )


def _by_chapter(fitted: Fitted[Any]) -> Fitted[Any]:
    """The same fit with its kept chapters in reading order."""
    order = sorted(range(len(fitted.kept)), key=lambda i: fitted.kept[i].number)
    return _reordered(fitted, order)


def _reordered(fitted: Fitted[T], order: Sequence[int]) -> Fitted[T]:
    def pick(values: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(values[i] for i in order)

    return Fitted(
        kept=pick(fitted.kept),
        texts=pick(fitted.texts),
        token_counts=pick(fitted.token_counts),
        used_tokens=fitted.used_tokens,
        dropped=fitted.dropped,
        budget=fitted.budget,
    )
