"""What a session's pack (``POST /v1/context/session``) holds on the coding-memory projects.

Each project file is loaded into a fresh scope through the HTTP API of one real
``manage.py serve`` (``bench.codingmemory.load_project``: one remember per entry, in file
order). The session pack is read twice per project: at the start (no prompt captured yet)
and after the project's first ``--prompts`` prompts were captured as the hook captures them
(their subjects then bring entries too). For each item it prints the entry's id and kind in
the file, whether it is a standing instruction (``command``/``convention``) or a subject
of the recent prompts, and the pack's size; and how many of the items are among the
entries the captured prompts' gold lists (the "relevant" ids), which a resumed session
would have needed.

    .venv/bin/python bench/session_pack.py --files '<dir>/*.json' [--prompts 3] [--max-bytes 2000]
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.codingmemory import capture_source_id, load_project  # noqa: E402
from bench.served import ServerProcess, Store, pack_memory_citations  # noqa: E402


def describe(api, scope_id: str, max_bytes: int, ids: dict[str, str], entries: dict) -> dict:
    pack = api.ok("/v1/context/session", {"scope_id": scope_id, "max_bytes": max_bytes})
    by_server = {server: mine for mine, server in ids.items()}
    items = []
    for citation in pack_memory_citations(pack["content"]):
        mine = by_server.get(citation["entry_id"], "?")
        items.append((mine, entries.get(mine, {}).get("kind", "?")))
    experiences = (pack["content"] or "").count('"kind":"experience"')
    return {"bytes": pack["content_bytes"], "items": items, "experiences": experiences}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", required=True)
    parser.add_argument("--prompts", type=int, default=3, help="prompts captured before")
    parser.add_argument("--max-bytes", type=int, default=2000)
    args = parser.parse_args(argv)
    paths = sorted({p for pattern in args.files for p in glob.glob(pattern) or [pattern]})
    home = Path(tempfile.mkdtemp(prefix="pc-session-"))
    with ServerProcess(Store("sqlite", home), log_name=None) as server:
        api = server.client(timeout=60, retry_stale=True)
        for path in paths:
            project = json.loads(Path(path).read_text(encoding="utf-8"))
            scope_id = f"session-{project['project']}"
            ids = load_project(api, project, scope_id)
            entries = {entry["id"]: entry for entry in project["entries"]}
            kinds: dict[str, int] = {}
            for entry in project["entries"]:
                kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
            print(f"## {project['project']}: {len(entries)} entries {kinds}")
            start = describe(api, scope_id, args.max_bytes, ids, entries)
            print(f"  start    {start['bytes']:5d} B  {start['items']}")
            prompts = project["prompts"][: args.prompts]
            for turn, prompt in enumerate(prompts):
                api.ok(
                    "/v1/sources/content",
                    {
                        "scope_id": scope_id,
                        "source_id": capture_source_id(
                            scope_id, "session-bench", f"turn_id:{turn}", prompt["prompt"]
                        ),
                        "content": prompt["prompt"],
                    },
                    status=202,
                )
            after = describe(api, scope_id, args.max_bytes, ids, entries)
            wanted = {entry for prompt in prompts for entry in prompt["relevant"]}
            useful = [item for item in after["items"] if item[0] in wanted]
            print(
                f"  after {len(prompts)} prompts {after['bytes']:5d} B  {after['items']}"
                f"  ({len(useful)} of the prompts' relevant entries: {useful};"
                f" prompts: {[p['id'] + '/' + p['type'] for p in prompts]})"
            )
        api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
