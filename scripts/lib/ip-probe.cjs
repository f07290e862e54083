// Used by scripts/test-deb.sh inside the container: can this process reach loopback, and what
// happens to a TCP connection to 192.0.2.1 (TEST-NET-1)? Prints "loopback=ok|failed" and
// "away=answered:<code>" (refused, unreachable or connected: the packet left) or "away=dropped"
// (no answer in 3 s, or EPERM: what a cgroup IP filter does).
const net = require('node:net');
const server = net.createServer().listen(0, '127.0.0.1', () => {
  const local = net.connect(server.address().port, '127.0.0.1');
  local.on('error', () => finish('failed'));
  local.on('connect', () => finish('ok'));
});
function finish(loopback) {
  server.close();
  const away = net.connect(9, '192.0.2.1');
  const report = (outcome) => {
    console.log(`loopback=${loopback} away=${outcome}`);
    process.exit(0);
  };
  away.setTimeout(3000, () => report('dropped'));
  away.on('error', (error) => report(error.code === 'EPERM' ? 'dropped' : `answered:${error.code}`));
  away.on('connect', () => report('answered:connected'));
}
