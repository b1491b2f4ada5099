#!/usr/bin/env python3
"""A minimal SRE agent over OpenAI Chat Completions with tools, for `aa-grade run --agent
command:'python3 /opt/agent/chat_agent.py'` (docs/agents.md is the contract).

It sends the task prompt, runs every shell call the model makes with bash in the workspace,
returns what the command printed, and stops when the model answers without a call, calls
`finish`, or the turns run out. The answer is the file the prompt asks for, agent_output.json,
which the model writes with a command. Standard library only.
"""
import json
import os
import sys
import urllib.error
import urllib.request

from run_command import run_command

BASE_URL = os.environ["OPENAI_BASE_URL"].rstrip("/")
TOKEN = os.environ["OPENAI_API_KEY"]
MODEL = os.environ["AA_GRADE_MODEL"]
MAX_TURNS = int(os.environ.get("AA_GRADE_MAX_TURNS") or 0) or 100

TOOLS = [
    {"type": "function", "function": {
        "name": "shell",
        "description": "Run a bash command in the workspace; returns its exit status and output.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}},
    {"type": "function", "function": {
        "name": "finish",
        "description": "End the investigation once agent_output.json holds the answer.",
        "parameters": {"type": "object", "properties": {}}}},
]


def chat(messages):
    body = json.dumps({"model": MODEL, "messages": messages, "tools": TOOLS}).encode()
    req = urllib.request.Request(BASE_URL + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=900) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as err:  # the gateway's refusals say why in the body
        sys.exit(f"chat_agent: the model call failed: {err.code} {err.read().decode(errors='replace')}")


def main():
    messages = [{"role": "user", "content": os.environ["AA_GRADE_PROMPT"]}]
    for _ in range(MAX_TURNS):
        message = chat(messages)["choices"][0]["message"]
        messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
        calls = message.get("tool_calls") or []
        if not calls:
            print(message.get("content") or "")
            return
        for call in calls:
            name = call["function"]["name"]
            if name == "finish":
                print("finished")
                return
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
                output = run_command(args["cmd"]) if name == "shell" or "cmd" in args else f"unknown tool {name}"
            except (ValueError, KeyError, TypeError) as err:
                output = f"bad arguments: {err}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    print("out of turns")


if __name__ == "__main__":
    main()
