import { existsSync, readdirSync } from "node:fs";
import { basename, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { MapleConfig } from "../../config/settings.js";
import type { RouteContext } from "./routeContext.js";

/** Where `npm run build` writes the web chat (webui/build.mjs): dist/webui, beside dist/src. */
export const webUiBundleDir = fileURLToPath(new URL("../../../webui/", import.meta.url));

/**
 * The page runs only its own bundle and talks only to its own origin. Model output is untrusted:
 * even if the sanitizer let a handler or a script through, nothing inline runs, no remote image
 * can leak a conversation, and Trusted Types refuse any HTML that did not pass DOMPurify.
 */
export const webUiContentSecurityPolicy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types dompurify"
].join("; ");

/** The build names every asset by its content hash, so a browser may keep it for good; index.html must be asked for each time. */
const immutableAsset = "public, max-age=31536000, immutable";

const precompressed = /\.(br|gz)$/;

function bundleFiles(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const full = join(dir, entry.name);
        return entry.isDirectory() ? bundleFiles(full) : [full];
    });
}

function isBuilt(): boolean {
    return existsSync(join(webUiBundleDir, "index.html"));
}

/**
 * The URL paths of the web chat ("/", "/index.html", "/assets/app-HASH.js", …): the page and its
 * code are public like any web page's, so they answer without the API key (the page asks for the
 * key when the API answers 401). Empty when the web chat is off or not built.
 */
export function webUiPaths(config: Pick<MapleConfig, "webUi">): string[] {
    if (!config.webUi || !isBuilt()) return [];
    const files = bundleFiles(webUiBundleDir).filter((file) => !precompressed.test(file));
    return ["/", ...files.map((file) => `/${relative(webUiBundleDir, file).split(sep).join("/")}`)];
}

function setWebUiHeaders(reply: FastifyReply, path: string): void {
    const name = basename(path).replace(precompressed, "");
    reply.header("cache-control", name === "index.html" ? "no-cache" : immutableAsset);
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
    if (name.endsWith(".html")) reply.header("content-security-policy", webUiContentSecurityPolicy);
}

/**
 * GET / and its assets: the built-in web chat (webui/), a static page that talks to Maple only
 * through the public API. Brotli and gzip variants are written at build time and chosen by
 * Accept-Encoding. Off with MAPLE_WEBUI=false.
 */
export function webUiRoute(app: FastifyInstance, context: RouteContext): void {
    if (!context.config.webUi) return;
    if (!isBuilt()) {
        app.log.warn(`the web chat is not built (${webUiBundleDir} has no index.html; run npm run build): / serves nothing`);
        return;
    }
    void app.register(fastifyStatic, {
        root: webUiBundleDir,
        prefix: "/",
        // One route per built file, found once at start-up: any other path stays Maple's JSON 404.
        wildcard: false,
        globIgnore: ["**/*.br", "**/*.gz"],
        preCompressed: true,
        index: ["index.html"],
        cacheControl: false,
        dotfiles: "ignore",
        setHeaders: setWebUiHeaders
    });
    app.addHook("onListen", async function logWebUiUrl() {
        const address = app.server.address();
        if (address === null || typeof address === "string") return;
        // A wildcard address is not one a browser can open; the same machine reaches it on loopback.
        const host = address.address === "0.0.0.0" ? "127.0.0.1" : address.address === "::" ? "::1" : address.address;
        app.log.info({ url: `http://${host.includes(":") ? `[${host}]` : host}:${address.port}/` }, "web chat");
    });
}
