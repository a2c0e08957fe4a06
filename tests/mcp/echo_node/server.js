#!/usr/bin/env node
// A stdio MCP server with one tool, `echo`, speaking newline-delimited JSON-RPC (enough of the protocol for
// initialize, tools/list and tools/call).
const readline = require("readline");

const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
const echo = {
  name: "echo",
  description: "Echo the text back.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
};

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // a notification
  if (msg.method === "initialize") {
    send({ id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
                                 serverInfo: { name: "echo-mcp", version: "1.0.0" } } });
  } else if (msg.method === "tools/list") {
    send({ id: msg.id, result: { tools: [echo] } });
  } else if (msg.method === "tools/call") {
    send({ id: msg.id, result: { content: [{ type: "text", text: "echo: " + msg.params.arguments.text }] } });
  } else {
    send({ id: msg.id, error: { code: -32601, message: "no such method: " + msg.method } });
  }
});
