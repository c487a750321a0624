"""LangChain: a Membrane prompt in an LCEL chain that returns the answer and its ref map.

Run: python examples/langchain_chain.py   (needs membrane-aol[langchain])
The chat model is LangChain's own FakeListChatModel, so nothing leaves the machine.
"""

from __future__ import annotations

import re

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from membrane import count_tokens
from membrane.adapters.langchain import MembranePromptTemplate, cited_chain

BUDGET = 400

prompt = MembranePromptTemplate(
    max_tokens=BUDGET, core_content="You are a support agent. Cite memories as [Mem:N]."
)
model = FakeListChatModel(responses=["Refunds are accepted for 30 days [Mem:1]."])
chain = cited_chain(prompt, model)

documents = [
    Document(id="kb-refunds", page_content="Refunds are accepted within 30 days of delivery."),
    *[
        Document(id=f"kb-{i}", page_content=f"Shipping note {i}: parcels to zone {i} take a week.")
        for i in range(40)
    ],
]
history = [
    HumanMessage(content="Hi, I bought a kettle last week."),
    AIMessage(content="Thanks, how can I help with the kettle?"),
]
out = chain.invoke(
    {"question": "Can I still return it?", "memories": documents, "history": history}
)

cited = [out["ref_map"][int(n)] for n in re.findall(r"\[Mem:(\d+)\]", out["answer"])]
print(out["answer"])
print("cited:", cited)
print("prompt tokens:", out["metadata"]["token_count"], "of", BUDGET)

assert cited == ["kb-refunds"]
assert out["metadata"]["segments_kept"] < len(documents)
value = prompt.invoke(
    {"question": "Can I still return it?", "memories": documents, "history": history}
)
sent = sum(count_tokens(str(m.content)) + 3 for m in value.to_messages())
assert sent <= BUDGET, sent
