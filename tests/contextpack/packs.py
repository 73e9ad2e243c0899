"""Reading a Context Pack in relevance tests: the items between its markers."""

import json

BEGIN, END = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1", "END_POWERCONTEXT_PREPARED_CONTEXT_V1"


def items(pack):
    """The pack's items, in order; none for an empty pack."""
    if pack["status"] == "empty":
        return []
    body = pack["content"].split(BEGIN + "\n", 1)[1].split("\n" + END, 1)[0]
    return json.loads(body)["items"]
