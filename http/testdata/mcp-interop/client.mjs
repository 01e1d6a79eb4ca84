// The official TypeScript MCP client against civnode's POST /mcp, run by
// TestMCPTypeScriptClient (http/mcp_interop_test.go). It connects with the
// bearer token, initialises, lists the tools, calls list_missions and
// invoke_servicenet_agent_sync, and prints a JSON summary on stdout.
//
// Environment: CIVNODE_URL, the node's base URL (http://127.0.0.1:7777);
// CIVNODE_TOKEN, a control token; CIVNODE_AGENT, the agent to invoke.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const base = process.env.CIVNODE_URL;
const token = process.env.CIVNODE_TOKEN;
const agent = process.env.CIVNODE_AGENT ?? "slow";
if (!base || !token) {
  console.error("set CIVNODE_URL and CIVNODE_TOKEN");
  process.exit(2);
}

// What a tool call answered, as the summary shows it.
function answer(result) {
  return {
    isError: result.isError ?? false,
    structuredContent: result.structuredContent,
    text: result.content.filter((c) => c.type === "text").map((c) => c.text),
  };
}

const client = new Client({ name: "civnode-interop", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const missions = await client.callTool({ name: "list_missions", arguments: {} });
  const invoked = await client.callTool({
    name: "invoke_servicenet_agent_sync",
    arguments: { agent_id: agent, message: "What is the answer?", wait: 10 },
  });
  const summary = {
    protocolVersion: transport.protocolVersion,
    sessionId: transport.sessionId ?? null,
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })),
    list_missions: answer(missions),
    invoke_servicenet_agent_sync: answer(invoked),
  };
  process.stdout.write(JSON.stringify(summary) + "\n");
  await client.close();
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
