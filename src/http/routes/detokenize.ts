import type { FastifyInstance } from "fastify";
import { parseDetokenizeRequest } from "../../openai/tokenizeRequest.js";
import { checkPromptTokenIds } from "../../core/promptChecks.js";
import type { RouteContext } from "./routeContext.js";

/**
 * POST /detokenize: `{tokens}` → the text, under llama-server's name (`content`) and vLLM's
 * (`prompt`). Ids outside the vocabulary are a 400 naming `tokens`.
 */
export function detokenizeRoute(app: FastifyInstance, context: RouteContext): void {
    app.post("/detokenize", async (request) => {
        const { engine } = context.host.requireReady();
        const detokenize = parseDetokenizeRequest(request.body);
        context.checkModel(detokenize.model);
        const text = engine.detokenize(checkPromptTokenIds(engine, detokenize.tokens, "tokens"));
        return { content: text, prompt: text };
    });
}
