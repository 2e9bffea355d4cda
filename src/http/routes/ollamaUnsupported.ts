import type { FastifyInstance } from "fastify";
import { InvalidRequestError } from "../../errors.js";
import { ollamaErrorFormat } from "../../ollama/errorFormat.js";
import type { RouteContext } from "./routeContext.js";

/** Ollama routes Maple does not serve, each with what Maple does instead. */
const unsupported: Record<string, string> = {
    "/api/create": "Maple does not build models from Modelfiles: it serves one GGUF with its own chat template (maple serve --model SPEC --chat-template FILE).",
    "/api/copy": "Maple does not copy models: it serves one model, named by --model-id.",
    "/api/push": "Maple does not push models: it downloads them from Hugging Face (POST /api/pull, maple pull).",
    "/api/embed": "This server serves a chat model, not an embedding model: /api/embed is not available.",
    "/api/embeddings": "This server serves a chat model, not an embedding model: /api/embeddings is not available."
};

/** POST /api/create, /api/copy, /api/push, /api/embed, /api/embeddings: a 400 in Ollama's shape saying why. */
export function ollamaUnsupportedRoute(app: FastifyInstance, _context: RouteContext): void {
    for (const [path, message] of Object.entries(unsupported)) {
        app.post(path, { config: { errorFormat: ollamaErrorFormat } }, async () => {
            throw new InvalidRequestError(message, null, "unsupported_route");
        });
    }
}
