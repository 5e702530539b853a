// Plain CommonJS on purpose: it must run, and say something useful, on any Node,
// including the Node 20 that would otherwise fail deep inside a dependency or on a .ts entry.
"use strict";
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `petstore-gateway needs Node 22.18 or newer (Node 24 LTS recommended); this is Node ${process.versions.node}.\n` +
      "Get one without touching the system Node:\n" +
      '  npm install -g --prefix "$HOME/.local/node24" node@24\n' +
      '  export PATH="$HOME/.local/node24/bin:$PATH"',
  );
  process.exit(1);
}
