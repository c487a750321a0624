"""The demo's embedded inputs: an engineering support chat, its memory store and system rules.

The chat follows one on-call morning at an online furniture shop: a nightly export that was
killed for memory, duplicate orders from retried payment webhooks, the fixes and the write-up.
Late questions ask for details from early tool results, which by then have left the history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from membrane.records import MemoryItem

__all__ = ["CORE_RULES", "MEMORIES", "TURNS", "DemoTurn"]

CORE_RULES = (
    "You are Harbor, the engineering support assistant of Harbor & Pine, an online furniture "
    "shop. You help the platform team diagnose production problems, plan fixes and write "
    "incident notes.\n"
    "- Lead with the most likely cause, then the evidence for it, then the next step.\n"
    "- Use the tools to read logs, orders, settings and pull requests instead of assuming "
    "what they say.\n"
    "- Cite a remembered fact with its [Mem:N] tag when you rely on it.\n"
    "- Say plainly when something is a guess, and how to check it."
)


@dataclass(frozen=True, slots=True)
class DemoTurn:
    """One user message and the messages that answered it (tool calls, results, the reply)."""

    user: str
    replies: tuple[dict[str, Any], ...]


def _say(text: str) -> tuple[dict[str, Any], ...]:
    return ({"role": "assistant", "content": text},)


def _tool(
    call_id: str, name: str, arguments: dict[str, Any], result: str, reply: str
) -> tuple[dict[str, Any], ...]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)},
    }
    return (
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
        {"role": "assistant", "content": reply},
    )


MEMORIES: tuple[MemoryItem, ...] = (
    MemoryItem(
        id="proc-answer-style",
        memory_type="procedural",
        kind="preference",
        content="Keep answers short and lead with the root cause. Put every command in a code "
        "block labelled with the host or namespace it runs in. Skip background the team "
        "already knows.",
    ),
    MemoryItem(
        id="proc-change-control",
        memory_type="procedural",
        kind="policy",
        content="Every production change needs an OPS ticket and a second engineer's approval "
        "before it is applied. Temporary resource overrides and one-off jobs count as changes. "
        "Put the ticket number in the incident channel.",
    ),
    MemoryItem(
        id="proc-incident-comms",
        memory_type="procedural",
        kind="policy",
        content="During an incident, post a status line in #inc-room every 30 minutes. Write "
        "every timestamp in UTC. Close the incident with a link to the postmortem draft.",
    ),
    MemoryItem(
        id="fact-stack",
        kind="architecture",
        content="The order service is a Django 4.2 app on Postgres 15 behind pgbouncer, "
        "deployed to the eu-west-1 cluster by Argo CD.",
    ),
    MemoryItem(
        id="fact-export-job",
        kind="architecture",
        content="The nightly warehouse export, cronjob wh-export in namespace orders, starts at "
        "02:15 UTC and writes one CSV per day to s3://hp-warehouse-drop/outbound/.",
    ),
    MemoryItem(
        id="fact-partner",
        kind="partner",
        content="Lindqvist Logistics fetches the export at 04:00 UTC; a missing file delays "
        "next-day shipping for every order in it.",
    ),
    MemoryItem(
        id="fact-webhooks",
        kind="architecture",
        content="Stripe sends payment webhooks to /hooks/stripe and retries any delivery that "
        "times out or fails for up to three days.",
    ),
    MemoryItem(
        id="fact-oncall",
        kind="people",
        content="Dana Okafor is primary on-call this week and Malik Reyes is secondary.",
    ),
    MemoryItem(
        id="fact-export-limits",
        kind="capacity",
        content="The export worker pod has a 512 MiB memory limit and 1 GiB of ephemeral storage.",
    ),
    MemoryItem(
        id="fact-alerting",
        kind="architecture",
        content="Alerts go through Alertmanager to the PagerDuty service orders-primary; every "
        "alert rule must link a runbook page under wiki/ops/runbooks.",
    ),
    MemoryItem(
        id="ep-newline-bug",
        memory_type="episodic",
        kind="incident",
        content="(2024-03-11) The export failed once when a product name contained a newline; "
        "the fix was to quote every CSV field.",
    ),
    MemoryItem(
        id="ep-spring-oom",
        memory_type="episodic",
        kind="incident",
        content="(2024-05-02) An export worker was OOM-killed during the spring sale when the "
        "daily order count tripled; it passed on a rerun after midnight traffic dropped.",
    ),
    MemoryItem(
        id="ep-idempotency",
        memory_type="episodic",
        kind="decision",
        content="(2024-06-18 retro) After a Stripe outage the team agreed to make order "
        "creation idempotent on the PaymentIntent id; the work was never scheduled.",
    ),
    MemoryItem(
        id="ep-feedback",
        memory_type="episodic",
        kind="feedback",
        content="(last week) Dana asked for fewer caveats and for the exact command to run "
        "rather than a description of it.",
    ),
    MemoryItem(
        id="ep-sftp-move",
        memory_type="episodic",
        kind="change",
        content="(2024-07-01) Lindqvist retired their SFTP host, so the export moved to the S3 "
        "drop bucket they read from.",
    ),
)

_LOGS_28461 = (
    "job wh-export-28461 (cronjob wh-export, namespace orders)\n"
    "02:15:04 UTC start export for 2024-06-14, orders since 2024-06-14T00:00Z\n"
    "02:15:09 UTC query opened, prefetching line_items and gift_options\n"
    "02:22:51 UTC rows processed 100,000 rss 301 MiB\n"
    "02:29:40 UTC rows processed 184,220 of 412,908 rss 498 MiB\n"
    "02:31:07 UTC container export terminated: reason OOMKilled, exit code 137, "
    "peak rss 511 MiB, limit 512 MiB\n"
    "02:31:07 UTC no object written to s3://hp-warehouse-drop/outbound/"
)

_EXPORT_TASK_PASTE = """Here is the export task as it runs today (orders/tasks/export.py):

```python
import csv
import io
from datetime import date, datetime, time, timezone

import boto3
from django.conf import settings

from orders.models import Order

FIELDS = [
    "order_number", "created_at", "customer_ref", "ship_name", "ship_line1", "ship_line2",
    "ship_city", "ship_postcode", "ship_country", "sku", "quantity", "unit_price",
    "gift_message", "delivery_slot", "warehouse_notes",
]


def export_day(day: date) -> str:
    start = datetime.combine(day, time.min, tzinfo=timezone.utc)
    orders = list(
        Order.objects.filter(created_at__gte=start, status__in=["paid", "packed"])
        .select_related("shipping_address")
        .prefetch_related("line_items__product", "gift_options")
        .order_by("id")
    )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, quoting=csv.QUOTE_ALL)
    writer.writeheader()
    for order in orders:
        address = order.shipping_address
        gift = order.gift_options.first()
        for item in order.line_items.all():
            writer.writerow({
                "order_number": order.number,
                "created_at": order.created_at.isoformat(),
                "customer_ref": order.customer_ref,
                "ship_name": address.name,
                "ship_line1": address.line1,
                "ship_line2": address.line2,
                "ship_city": address.city,
                "ship_postcode": address.postcode,
                "ship_country": address.country,
                "sku": item.product.sku,
                "quantity": item.quantity,
                "unit_price": str(item.unit_price),
                "gift_message": gift.message if gift else "",
                "delivery_slot": order.delivery_slot or "",
                "warehouse_notes": order.warehouse_notes or "",
            })
    key = f"outbound/orders-{day.isoformat()}.csv"
    s3 = boto3.client("s3", region_name=settings.AWS_REGION)
    s3.put_object(
        Bucket=settings.WAREHOUSE_BUCKET,
        Key=key,
        Body=buffer.getvalue().encode("utf-8"),
        ContentType="text/csv",
    )
    return key
```

The gift_options relation is the one that shipped on Tuesday."""

_DUPLICATES = (
    "3 order pairs share a payment_intent (created 2024-06-14 02:00-03:00 UTC)\n"
    "HP-771203 / HP-771204  pi_3PRk2aLx9QeT0b1m  created 02:18:44.102 / 02:18:54.961  "
    "amount EUR 1,249.00  charges 1\n"
    "HP-771219 / HP-771221  pi_3PRk4gLx9QeT1c7z  created 02:21:10.530 / 02:21:21.018  "
    "amount EUR 389.00  charges 1\n"
    "HP-771240 / HP-771242  pi_3PRk7hLx9QeT2d4q  created 02:24:02.887 / 02:24:13.405  "
    "amount EUR 2,060.50  charges 1\n"
    "webhook log: first delivery of each event answered 504 after 10.0 s; the retry 10 s "
    "later answered 200"
)

_RERUN_STATUS = (
    "job wh-export-manual-0614: Complete\n"
    "started 08:12:30 UTC, finished 08:24:12 UTC (11m42s)\n"
    "rows 412,908, peak rss 803 MiB of 1 GiB (temporary override, OPS-4127)\n"
    "wrote s3://hp-warehouse-drop/outbound/orders-2024-06-14.csv (38.2 MB)"
)

_SETTINGS_GREP = (
    "settings/prod.py:84   'ENGINE': 'django.db.backends.postgresql',\n"
    "settings/prod.py:85   'HOST': 'pgbouncer.orders.svc',\n"
    "settings/prod.py:86   'PORT': 6432,\n"
    "settings/prod.py:88   'DISABLE_SERVER_SIDE_CURSORS': True,  # pgbouncer transaction "
    "pooling\n"
    "settings/prod.py:91   'CONN_MAX_AGE': 0,"
)

_PR_2291 = (
    "PR #2291 'wh-export: stream rows by keyset pages, upload from a temp file' by dokafor\n"
    "files: orders/tasks/export.py (+88 -41), orders/tests/test_export.py (+64), "
    "deploy/values-prod.yaml (+2 -2)\n"
    "- replaces list(queryset) with pages of 5,000 orders keyed on id > last_id\n"
    "- writes rows to tempfile.SpooledTemporaryFile(max_size=64 MiB), then "
    "s3.upload_fileobj\n"
    "- values-prod.yaml: export.resources.limits.memory 512Mi -> 1Gi\n"
    "- tests: three pages with a partial last page; gift message with a newline\n"
    "CI: passed (unit 4m10s, integration 9m02s)"
)

_HANDLER_PASTE = """Now the duplicate orders. This is the webhook handler (orders/hooks.py):

```python
@csrf_exempt
@require_POST
def stripe_webhook(request):
    payload = request.body
    signature = request.headers.get("Stripe-Signature", "")
    try:
        event = stripe.Webhook.construct_event(
            payload, signature, settings.STRIPE_WEBHOOK_SECRET
        )
    except (ValueError, stripe.error.SignatureVerificationError):
        return HttpResponseBadRequest()

    if event["type"] != "payment_intent.succeeded":
        return HttpResponse(status=200)

    intent = event["data"]["object"]
    with transaction.atomic():
        cart = Cart.objects.select_for_update().get(pk=intent["metadata"]["cart_id"])
        order = Order.objects.create(
            cart=cart,
            customer_ref=cart.customer_ref,
            payment_intent=intent["id"],
            total=Decimal(intent["amount_received"]) / 100,
            currency=intent["currency"].upper(),
            status="paid",
        )
        for line in cart.lines.select_related("product"):
            order.line_items.create(
                product=line.product,
                quantity=line.quantity,
                unit_price=line.unit_price,
            )
        cart.status = "converted"
        cart.save(update_fields=["status"])
    send_confirmation.delay(order.pk)
    return HttpResponse(status=200)
```

I want order creation idempotent on the PaymentIntent. Unique constraint, or look up first?"""

TURNS: tuple[DemoTurn, ...] = (
    DemoTurn(
        "Morning. Lindqvist emailed that there is no export file for the 14th, so nothing "
        "ships tomorrow. Where do I start?",
        _say(
            "Start with the job itself: if the 02:15 run failed, the file was never written, and "
            "Lindqvist only sees the bucket. Check the cronjob's last run in the orders "
            "namespace and its exit reason. If you give me the job id from the scheduler I can "
            "pull its logs. In parallel, post a first status line in #inc-room so support knows "
            "shipping for the 14th is at risk."
        ),
    ),
    DemoTurn(
        "The scheduler says the run was wh-export-28461. Can you pull its logs?",
        _tool(
            "call_logs_28461",
            "get_job_logs",
            {"job_id": "wh-export-28461", "tail": 200},
            _LOGS_28461,
            "It was killed for memory. The container hit its 512 MiB limit at 02:31:07 UTC with "
            "exit code 137 after writing 184,220 of 412,908 rows, so nothing reached the "
            "bucket. The resident size grew steadily from the first page, which points at the "
            "job holding the whole day in memory rather than at one bad row.",
        ),
    ),
    DemoTurn(
        "Exit 137 again. Why would it suddenly need more memory? Order volume yesterday was "
        "normal.",
        _say(
            "Volume is not the only input: the job keeps every order, every line item and "
            "every related object alive until the upload, so memory grows with bytes per "
            "order, not only with orders. Anything that made each order heavier would do it, "
            "such as a new prefetched relation or a long text field. Did a model change ship "
            "this week?"
        ),
    ),
    DemoTurn(
        "Yes: the gift options feature shipped on Tuesday. Customers can add a message of up to "
        "500 characters. Could that be it?",
        _say(
            "Very likely. The export prefetches related rows for every order, so a new relation "
            "adds a Python object per order, and a 500-character message is several times the "
            "size of the rest of the row. At 412,908 rows even 600 extra bytes each is about "
            "250 MB before Python's object overhead. Paste the export task and I will point at "
            "the lines that hold the memory."
        ),
    ),
    DemoTurn(
        _EXPORT_TASK_PASTE,
        _say(
            "Three things hold the memory. First, list(...) loads every order and its "
            "prefetched line items and gift options at once. Second, the whole CSV is built in "
            "a StringIO and then copied again by getvalue().encode(), so at the end the file "
            "exists twice. Third, gift_options.first() inside the loop bypasses the prefetch "
            "and runs a query per order, which is slow but not a memory problem. The fix is to "
            "read in pages and stream the rows to a file that is uploaded at the end."
        ),
    ),
    DemoTurn(
        "Before we fix the code properly, can we get today's file out? Lindqvist can take a "
        "late file until noon.",
        _say(
            "Yes: rerun the export once with a higher memory limit. Raise the limit on a "
            "one-off job rather than the cronjob, so tonight's run is unchanged, and give it "
            "1 GiB; the last run died at half the rows with 511 MiB. That is a production "
            "change, so it needs an OPS ticket and a second engineer's approval first."
        ),
    ),
    DemoTurn(
        "Ticket is OPS-4127 and Malik approved it. What exactly do I run?",
        _say(
            "In the orders namespace of the eu-west-1 cluster:\n\n"
            "```\nkubectl -n orders create job wh-export-manual-0614 --from=cronjob/wh-export "
            "--dry-run=client -o yaml \\\n  | yq '.spec.template.spec.containers[0]"
            '.resources.limits.memory = "1Gi"\' \\\n  | kubectl apply -f -\n```\n\n'
            "Then follow it with kubectl -n orders logs -f job/wh-export-manual-0614. Note the "
            "start time for the incident timeline."
        ),
    ),
    DemoTurn(
        "The rerun is going. Meanwhile support says three customers got two order "
        "confirmations each last night. Related to the export?",
        _tool(
            "call_dupes_0614",
            "find_duplicate_orders",
            {"created_after": "2024-06-14T00:00:00Z", "group_by": "payment_intent"},
            _DUPLICATES,
            "Related in timing, not in cause. Three pairs of orders share one PaymentIntent, "
            "each pair created about ten seconds apart between 02:18 and 02:24 UTC, which is "
            "while the export was running. Each PaymentIntent has one charge, so nobody paid "
            "twice: the customers got two orders for one payment.",
        ),
    ),
    DemoTurn(
        "So Stripe retried the webhook and we created the order a second time?",
        _say(
            "Yes. Our handler answered the first delivery with a 504 after ten seconds, but the "
            "transaction behind it had already committed the order. Stripe saw a failure and "
            "retried, and the handler has no check for an existing order with the same "
            "PaymentIntent, so the retry created a second one. That check is the idempotency "
            "work agreed after the June outage and never scheduled."
        ),
    ),
    DemoTurn(
        "Why was the webhook handler slow at 02:20 in the first place? It normally answers in "
        "under 200 ms.",
        _say(
            "My best guess is the export. It opens one long read with big prefetches on the "
            "same primary at 02:15, and the handler's insert waits on the line_items sequence "
            "and on index pages the export is scanning. The three slow deliveries all fall "
            "inside the export's run. To check: look at pg_stat_activity samples or the "
            "slow-query log for 02:15-02:31 and see whether the handler's insert waited on "
            "locks or on I/O."
        ),
    ),
    DemoTurn(
        "Good catch. Is the manual rerun finished? Check the job please.",
        _tool(
            "call_status_0614",
            "get_job_status",
            {"job_id": "wh-export-manual-0614"},
            _RERUN_STATUS,
            "It completed: 412,908 rows in 11 minutes 42 seconds, peaking at 803 MiB under the "
            "temporary 1 GiB limit, and the file for the 14th is in the outbound prefix at "
            "38.2 MB. Lindqvist can fetch it now.",
        ),
    ),
    DemoTurn(
        "Draft a two-line note to Lindqvist so they pick it up.",
        _say(
            "Hi Lindqvist team, the order file for 14 June is now in the usual outbound "
            "location (orders-2024-06-14.csv), about six hours late because our export job "
            "failed overnight. Sorry for the delay; tonight's file is expected on schedule, "
            "and we will tell you by 02:45 UTC if it is not."
        ),
    ),
    DemoTurn(
        "Now the real fix for the export. For streaming to S3, is plain boto3 enough or should "
        "we pull in smart_open?",
        _say(
            "Plain boto3 is enough. Write the CSV to a temporary file and call upload_fileobj, "
            "which switches to a multipart upload for large files by itself. smart_open would "
            "let you stream straight into S3 without the file, but it adds a dependency to "
            "save about 40 MB of local disk, and a temp file can be retried without "
            "rereading the database."
        ),
    ),
    DemoTurn(
        "The pod only has 1 GiB of ephemeral storage. Is a 40 MB temp file fine?",
        _say(
            "Yes, with room to spare: yesterday's file was 38.2 MB and the busiest day of the "
            "spring sale would be roughly three times that. Use SpooledTemporaryFile with a "
            "64 MiB threshold so small days never touch disk, and make sure the file is closed "
            "in a finally block so a failed upload does not leave it behind."
        ),
    ),
    DemoTurn(
        "Write the query part with iterator() instead of list().",
        _say(
            "Like this; iterator() ignores prefetch_related unless you give it a chunk size, "
            "so set one:\n\n```python\norders = (\n    Order.objects.filter(created_at__gte=start, "
            'status__in=["paid", "packed"])\n    .select_related("shipping_address")\n'
            '    .prefetch_related("line_items__product", "gift_options")\n'
            '    .order_by("id")\n    .iterator(chunk_size=2000)\n)\n```\n\n'
            "Each chunk of 2,000 orders is prefetched together and released before the next."
        ),
    ),
    DemoTurn(
        "What chunk size makes sense with Postgres server-side cursors? And does any of that "
        "change behind pgbouncer?",
        _say(
            "2,000 is a reasonable start; each fetch is one round trip, so below a few hundred "
            "the network dominates. pgbouncer matters a lot: in transaction pooling mode a "
            "server-side cursor only lives inside one transaction, so Django must either run "
            "the whole export in one transaction or have server-side cursors disabled. If they "
            "are disabled, iterator() still fetches the whole result into the client before "
            "yielding, and the memory problem comes back."
        ),
    ),
    DemoTurn(
        "We run pgbouncer in transaction mode. Is DISABLE_SERVER_SIDE_CURSORS set in prod?",
        _tool(
            "call_settings_grep",
            "grep_repository",
            {"path": "settings/prod.py", "pattern": "DATABASES|CURSORS|HOST|PORT|CONN"},
            _SETTINGS_GREP,
            "It is: settings/prod.py line 88 sets DISABLE_SERVER_SIDE_CURSORS to True for "
            "pgbouncer. So iterator() alone would not save memory here. Page through the "
            "orders yourself instead, by id, so each page is a small ordinary query.",
        ),
    ),
    DemoTurn(
        "Keyset pagination on id then. Sketch it.",
        _say(
            "```python\ndef order_pages(start, page_size=5000):\n    last_id = 0\n"
            "    while True:\n        page = list(\n            base_queryset(start)"
            '.filter(id__gt=last_id).order_by("id")[:page_size]\n        )\n'
            "        if not page:\n            return\n        yield page\n"
            "        last_id = page[-1].id\n```\n\n"
            "base_queryset keeps the select_related and prefetch_related calls, so each page "
            "prefetches its own line items and gift options. Only one page is in memory at a "
            "time, and every query is short, which also keeps the webhook handler's inserts "
            "from waiting behind one long read."
        ),
    ),
    DemoTurn(
        _HANDLER_PASTE,
        _say(
            "The constraint is what matters; a lookup is a courtesy on top. Two deliveries that "
            "race can both pass a lookup, but only one can insert under a unique index on "
            "payment_intent. In this handler, look for an order with intent['id'] right after "
            "the cart lock, return 200 if it exists, and catch IntegrityError around "
            "Order.objects.create for the race. Answering 200 in both cases stops Stripe "
            "retrying, and send_confirmation then runs once."
        ),
    ),
    DemoTurn(
        "The orders table has about 40 million rows. Will adding a unique index lock it?",
        _say(
            "A plain CREATE UNIQUE INDEX would block writes for the whole build, so use "
            "CREATE UNIQUE INDEX CONCURRENTLY in its own migration with atomic = False, then "
            "attach it as the constraint. It takes longer and cannot run in a transaction. The "
            "build fails if duplicates exist, so the three pairs from last night have to be "
            "resolved first."
        ),
    ),
    DemoTurn(
        "What do we do with the three pairs: refund one charge each?",
        _say(
            "No refund is needed: each pair has a single charge, so the customers paid once. "
            "Cancel the later order of each pair without refunding, keep the earlier one, and "
            "note the cancelled order numbers on the ticket. The later orders have not been "
            "picked yet because they were created after the export cut-off."
        ),
    ),
    DemoTurn(
        "Good, that is less scary. Write the macro support can send to those customers.",
        _say(
            "Hi, thanks for your order. Because of a technical problem on our side last night, "
            "you received two order confirmations for one purchase. You were charged only "
            "once, and we have cancelled the duplicate, so you will receive one delivery. No "
            "action is needed from you; sorry for the confusion."
        ),
    ),
    DemoTurn(
        "Back to the export. Roughly how much memory will the keyset version need?",
        _say(
            "Roughly: a page of 5,000 orders averages about 1.9 line items each, so about 9,500 "
            "rows of model objects, around 40-60 MB with the prefetched products and gift "
            "options. Add the interpreter and Django at about 90 MB and the spool buffer up to "
            "64 MiB, and the peak should sit near 200 MiB, flat whatever the day's volume."
        ),
    ),
    DemoTurn(
        "Let's also alert earlier next time. What should the alert be?",
        _say(
            "Alert on the outcome Lindqvist cares about, not only on the job: no new object in "
            "the outbound prefix by 03:00 UTC. Add a second, faster rule on "
            "kube_job_status_failed for the wh-export jobs so a crash pages at once. Route both "
            "to the on-call rotation, with a runbook link covering the rerun command."
        ),
    ),
    DemoTurn(
        "PR #2291 is up with the export fix. Can you go through it?",
        _tool(
            "call_pr_2291",
            "get_pull_request",
            {"number": 2291, "include": ["summary", "files", "checks"]},
            _PR_2291,
            "The approach is right and the tests cover the partial last page and the newline "
            "case. Two comments: 5,000 orders per page is fine given the estimate, but the PR "
            "also raises the cronjob's memory limit to 1Gi in values-prod.yaml, which hides a "
            "regression instead of catching it. I would keep 768Mi for a week and then go back "
            "to 512Mi.",
        ),
    ),
    DemoTurn(
        "Agreed, 768Mi for a week. What is left before we write the postmortem?",
        _say(
            "Four things: merge #2291 and watch tonight's run, ship the payment_intent "
            "constraint after cancelling the three duplicates, add the two alerts, and check "
            "the slow-query log to confirm the export slowed the webhook handler."
        ),
    ),
    DemoTurn(
        "For the postmortem timeline: at what time did the original job die, and with which "
        "exit code?",
        _say(
            "The job wh-export-28461 was OOM-killed at 02:31:07 UTC with exit code 137, at a "
            "peak resident size of 511 MiB against its 512 MiB limit."
        ),
    ),
    DemoTurn(
        "And how many rows had it processed before it died?",
        _say(
            "184,220 of the day's 412,908 rows, so a little under 45%, logged at 02:29:40 UTC. "
            "No object had been written to the bucket."
        ),
    ),
    DemoTurn(
        "Which PaymentIntent ids were in the duplicate pairs? I need them for the appendix.",
        _say(
            "pi_3PRk2aLx9QeT0b1m (HP-771203 / HP-771204), pi_3PRk4gLx9QeT1c7z "
            "(HP-771219 / HP-771221) and pi_3PRk7hLx9QeT2d4q (HP-771240 / HP-771242), each with "
            "one charge."
        ),
    ),
    DemoTurn(
        "Last one: summarise the action items with owners so I can paste them into the postmortem.",
        _say(
            "1. Merge PR #2291 (keyset export) and watch tonight's run: Dana.\n"
            "2. Cancel the three duplicate orders, then add the unique payment_intent index "
            "concurrently: Malik.\n"
            "3. Add the missing-file and failed-job alerts: Dana.\n"
            "4. Confirm the export slowed the webhook handler from the slow-query log: Malik.\n"
            "5. Return the export memory limit from 768Mi to 512Mi after a week: Dana."
        ),
    ),
)
