"""Drives `mnemo mcp` with the official MCP Python SDK, one step per stdin line.

Usage: python driver.py SPEC_JSON
SPEC_JSON: {"command": ..., "args": [...], "env": {...}, "stderr": path}
Each stdin line is a step, answered by one stdout line of JSON (the SDK's result in its
wire form, or {"exception": "..."}):
  {"op": "list_tools"} | {"op": "call", "tool": NAME, "args": {...}}
  {"op": "list_resources"} | {"op": "list_templates"} | {"op": "read", "uri": URI}
The first line out is the initialize result.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def emit(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def wire(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def step(session, s):
    op = s["op"]
    if op == "list_tools":
        return wire(await session.list_tools())
    if op == "call":
        return wire(await session.call_tool(s["tool"], s.get("args", {})))
    if op == "list_resources":
        return wire(await session.list_resources())
    if op == "list_templates":
        return wire(await session.list_resource_templates())
    if op == "read":
        return wire(await session.read_resource(s["uri"]))
    raise ValueError(f"unknown op {op}")


async def main():
    spec = json.loads(sys.argv[1])
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"])
    with open(spec["stderr"], "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                emit(wire(await session.initialize()))
                while True:
                    line = await anyio.to_thread.run_sync(sys.stdin.readline)
                    if not line:
                        break
                    try:
                        emit(await step(session, json.loads(line)))
                    except Exception as e:  # the test reads what failed
                        emit({"exception": f"{type(e).__name__}: {e}"})


anyio.run(main)
