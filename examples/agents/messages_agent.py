#!/usr/bin/env python3
"""A minimal SRE agent over Anthropic Messages, streaming, for `aa-grade run --agent
command:'python3 /opt/agent/messages_agent.py'` (docs/agents.md is the contract).

It sends the task prompt with a `bash` tool, reads each reply as server-sent events,
assembles the text and tool calls from the deltas, runs each call with bash in the
workspace, and stops when the model ends its turn without a call or the turns run out. The
answer is agent_output.json, which the model writes with a command. Standard library only.
"""
import json
import os
import sys
import urllib.error
import urllib.request

from run_command import run_command

BASE_URL = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
TOKEN = os.environ["ANTHROPIC_API_KEY"]
MODEL = os.environ["AA_GRADE_MODEL"]
MAX_TURNS = int(os.environ.get("AA_GRADE_MAX_TURNS") or 0) or 100

TOOLS = [{"name": "bash", "description": "Run a bash command in the workspace; returns its exit status and output.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def events(resp):
    """Yields (event name, data) of a server-sent event stream."""
    name, data = None, []
    for raw in resp:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield name, json.loads("\n".join(data))


def turn(messages):
    """One streamed call: the assistant's content blocks and why it stopped."""
    body = json.dumps({"model": MODEL, "max_tokens": 8192, "stream": True, "tools": TOOLS, "messages": messages}).encode()
    req = urllib.request.Request(BASE_URL + "/v1/messages", data=body, headers={
        "x-api-key": TOKEN, "anthropic-version": "2023-06-01", "content-type": "application/json"})
    blocks, partial, stop = [], {}, None
    try:
        with urllib.request.urlopen(req, timeout=900) as resp:
            for name, data in events(resp):
                kind = data.get("type", name)
                if kind == "content_block_start":
                    blocks.append(dict(data["content_block"]))
                    partial[data["index"]] = ""
                elif kind == "content_block_delta":
                    delta = data["delta"]
                    if delta["type"] == "text_delta":
                        blocks[data["index"]]["text"] += delta["text"]
                    elif delta["type"] == "input_json_delta":
                        partial[data["index"]] += delta["partial_json"]
                elif kind == "content_block_stop":
                    block = blocks[data["index"]]
                    if block["type"] == "tool_use":
                        block["input"] = json.loads(partial[data["index"]] or "{}")
                elif kind == "message_delta":
                    stop = data["delta"].get("stop_reason")
                elif kind == "error":
                    sys.exit(f"messages_agent: the stream failed: {data}")
    except urllib.error.HTTPError as err:
        sys.exit(f"messages_agent: the model call failed: {err.code} {err.read().decode(errors='replace')}")
    return blocks, stop


def main():
    messages = [{"role": "user", "content": os.environ["AA_GRADE_PROMPT"]}]
    for _ in range(MAX_TURNS):
        blocks, stop = turn(messages)
        messages.append({"role": "assistant", "content": blocks})
        calls = [b for b in blocks if b["type"] == "tool_use"]
        if not calls:
            print("".join(b.get("text", "") for b in blocks))
            return
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c["id"], "content": run_command(c["input"].get("command", ""))} for c in calls]})
    print("out of turns")


if __name__ == "__main__":
    main()
