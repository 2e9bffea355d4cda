import { createServer, type AddressInfo } from "node:net";

/** A loopback port that was free a moment ago (bind port 0, note it, let it go): connections to it are refused. */
export async function freePort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
}
