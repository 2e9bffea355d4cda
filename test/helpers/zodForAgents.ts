/**
 * A module resolve hook for the Agents SDK test. `@openai/agents` declares zod ^4 as a peer, and
 * Maple's own zod is 3.25 (its v3 API throughout); npm installs one `zod`, so the agents packages
 * would load zod 3 and fail at import. This hook gives them zod 4 (the `zod-v4` devDependency, an
 * alias of zod@4) and leaves every other importer's `zod` alone. Registered with
 * `module.register` before the SDK is imported.
 */
interface ResolveContext {
    parentURL?: string;
}
type NextResolve = (specifier: string, context: ResolveContext) => Promise<unknown>;

export async function resolve(specifier: string, context: ResolveContext, nextResolve: NextResolve): Promise<unknown> {
    const fromAgents = context.parentURL?.includes("/node_modules/@openai/agents") === true;
    if (fromAgents && (specifier === "zod" || specifier.startsWith("zod/"))) return nextResolve(`zod-v4${specifier.slice("zod".length)}`, context);
    return nextResolve(specifier, context);
}
