import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { threadPoolWarning } from "../../src/server/startServer.js";
import { exact } from "../helpers/grammar.js";
import { startTestServer } from "../helpers/testServer.js";

function memoryStream(): { stream: Writable; text: () => string } {
    const chunks: string[] = [];
    const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
            chunks.push(chunk.toString());
            done();
        }
    });
    return { stream, text: () => chunks.join("") };
}

const secretKey = "sk-maple-very-secret-key-123";
const privatePrompt = "my private prompt about zebra-42";
const privateAnswer = "confidential answer";

async function exercise(server: Awaited<ReturnType<typeof startTestServer>>): Promise<void> {
    const headers = { authorization: `Bearer ${secretKey}` };
    const grammar = exact(privateAnswer);
    for (const stream of [false, true]) {
        const chat = await server.post("/v1/chat/completions", { messages: [{ role: "user", content: privatePrompt }], max_tokens: 64, temperature: 0, grammar, stream }, headers);
        assert.equal(chat.status, 200);
        await chat.text();
        const completion = await server.post("/v1/completions", { prompt: privatePrompt, max_tokens: 64, temperature: 0, grammar, stream }, headers);
        assert.equal(completion.status, 200);
        await completion.text();
    }
    const wrongKey = await server.post("/v1/completions", { prompt: privatePrompt }, { authorization: `Bearer ${secretKey}x` });
    assert.equal(wrongKey.status, 401);
}

describe("logs", () => {
    it("never contain the API key, prompts or completions, even at trace level", async () => {
        const log = memoryStream();
        const server = await startTestServer({ apiKey: secretKey, logLevel: "trace" }, { logStream: log.stream });
        try {
            await exercise(server);
        } finally {
            await server.close();
        }
        const text = log.text();
        assert.ok(text.includes("request completed"), "requests are logged");
        assert.ok(!text.includes(secretKey), "the key never appears");
        assert.ok(!text.includes("zebra-42"), "the prompt never appears");
        assert.ok(!text.includes(privateAnswer), "the completion never appears");
    });

    it("contain prompt and completion text at debug level with MAPLE_LOG_PROMPTS, and still never the key", async () => {
        const log = memoryStream();
        const server = await startTestServer({ apiKey: secretKey, logLevel: "debug", logPrompts: true }, { logStream: log.stream });
        try {
            await exercise(server);
        } finally {
            await server.close();
        }
        const text = log.text();
        assert.ok(text.includes("zebra-42"));
        assert.ok(text.includes(privateAnswer));
        assert.ok(!text.includes(secretKey));
    });

    it("warn when UV_THREADPOOL_SIZE is not set (a server not started by the maple command), and only then", async () => {
        const saved = process.env.UV_THREADPOOL_SIZE;
        const startupLog = async (value: string | undefined): Promise<string> => {
            if (value === undefined) delete process.env.UV_THREADPOOL_SIZE;
            else process.env.UV_THREADPOOL_SIZE = value;
            const log = memoryStream();
            try {
                const server = await startTestServer({ logLevel: "warn" }, { logStream: log.stream });
                await server.close();
            } finally {
                if (saved === undefined) delete process.env.UV_THREADPOOL_SIZE;
                else process.env.UV_THREADPOOL_SIZE = saved;
            }
            return log.text();
        };
        assert.ok((await startupLog(undefined)).includes(threadPoolWarning));
        assert.ok(!(await startupLog("1")).includes("UV_THREADPOOL_SIZE"));
        assert.ok(!(await startupLog("4")).includes("UV_THREADPOOL_SIZE"), "a size the user chose is theirs");
    });
});
