/**
 * The shipped /etc/iris/config, written from the schema: every key commented out at its
 * default with its description, so user edits rarely clash with an upgrade's new defaults and
 * a partial file always works (the loader fills in the rest).
 */
import { configSchema } from './schema.js';

interface Node {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: readonly unknown[];
  maximum?: number;
  maximumReason?: string;
  properties?: Record<string, Node>;
}

const EXAMPLES = `
# MCP servers: one table each, stdio or HTTP. For example:
#
# [mcp.servers.files]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]
# deny = ["move_file"]
#
# [mcp.servers.home]
# url = "http://127.0.0.1:8123/mcp"
# headers = { Authorization = "Bearer \${HOME_TOKEN}" }

# Rooms: one table per Wyoming satellite IRIS is the brain of. For example:
#
# [satellites.kitchen]
# uri = "tcp://192.168.1.30:10700"
# area = "kitchen"
`;

export function renderDefaultConfig(): string {
  const lines = [
    '# IRIS configuration (TOML). Every key is optional: commented keys show their defaults.',
    '# Check it with `iris config check`; apply it with `systemctl reload iris`.',
    '# ${VAR} in strings is replaced from the environment.',
  ];
  for (const [section, node] of Object.entries(configSchema.properties as Record<string, Node>)) {
    lines.push('', `[${section}]`);
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      if (key === 'servers') continue; // a table of tables: shown by example below
      const choices = child.enum ? ` One of: ${child.enum.map((v) => JSON.stringify(v)).join(', ')}.` : '';
      const most = child.maximumReason === undefined ? '' : ` At most ${child.maximum}: ${child.maximumReason}.`;
      if (child.description) lines.push(`# ${child.description}${choices}${most}`);
      lines.push(`#${key} = ${child.default === undefined ? '""' : JSON.stringify(child.default)}`);
    }
  }
  return `${lines.join('\n')}\n${EXAMPLES}`;
}
