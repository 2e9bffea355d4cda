import type { FastifyInstance } from "fastify";

const apiPrefix = "/v1/";

/**
 * Serves every `/v1/…` route registered after this call at the same path without `/v1` as well
 * (`/chat/completions`, `/completions`, `/models`, …): llama-server serves its OpenAI routes
 * both ways, and many client configs migrated from it set a base URL without `/v1`. The alias
 * is the same route (handler, hooks, auth); a path Maple already serves without `/v1` would
 * collide, and Fastify refuses that at start-up rather than letting one silently win.
 */
export function serveUnprefixedAliases(app: FastifyInstance): void {
    app.addHook("onRoute", function alias(route) {
        // Fastify derives a HEAD route from each GET one; the GET alias gets its own.
        if (route.method === "HEAD" || !route.url?.startsWith(apiPrefix)) return;
        const url = route.url.slice(apiPrefix.length - 1);
        this.route({ ...route, url });
    });
}
