// The ops port's connection cap, kept by reclaiming rather than refusing. Node's maxConnections
// refuses whoever comes once the port is full: a few clients holding keep-alive connections then
// get the kubelet's liveness probe failed (and the replica restarted), and behind Docker's
// published port every peer is the bridge's address, so a cap per peer would not tell them apart.
// As Envoy's overload manager and HAProxy reclaim idle connections, a newcomer over the cap
// closes the connection that has been idle longest; one with an answer under way only when every
// connection has one. A probe, which asks at once, is then always the most recently active.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface Activity {
  /** Requests of the connection started and not yet answered (or abandoned). */
  answering: number;
}

/** Holds `server` to `cap` open connections, closing the least recently active for a newcomer. */
export function reclaimLeastRecentlyActive(server: Server, cap: number): void {
  // A Map keeps insertion order: re-inserting a connection on activity keeps the least recently
  // active first, so finding a victim reads from the front. The cap bounds the scan.
  const open = new Map<Socket, Activity>();
  const touch = (socket: Socket, activity: Activity) => {
    if (!open.delete(socket)) return;
    open.set(socket, activity);
  };
  server.on("connection", (socket: Socket) => {
    if (open.size >= cap) {
      const victim = leastRecentlyActive(open);
      if (victim !== undefined) {
        open.delete(victim);
        victim.destroy();
      }
    }
    open.set(socket, { answering: 0 });
    socket.once("close", () => open.delete(socket));
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const { socket } = req;
    const activity = open.get(socket);
    if (activity === undefined) return;
    activity.answering++;
    touch(socket, activity);
    res.once("close", () => {
      activity.answering--;
      touch(socket, activity);
    });
  });
}

function leastRecentlyActive(open: ReadonlyMap<Socket, Activity>): Socket | undefined {
  let oldest: Socket | undefined;
  for (const [socket, activity] of open) {
    if (activity.answering === 0) return socket;
    oldest ??= socket;
  }
  return oldest;
}
