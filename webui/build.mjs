// Bundles the web chat into dist/webui: index.html, assets named by content hash, and a brotli
// and a gzip copy of each text file for Maple to serve by Accept-Encoding (src/http/routes/webUi.ts).
import { copyFileSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import process from "node:process";
import { URL, fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = fileURLToPath(new URL(".", import.meta.url));
const outDir = join(here, "..", "dist", "webui");

rmSync(outDir, { recursive: true, force: true });
const result = await build({
    entryPoints: { app: join(here, "src", "main.tsx") },
    outdir: join(outDir, "assets"),
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    bundle: true,
    minify: true,
    format: "esm",
    target: ["chrome111", "firefox115", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    define: { "process.env.NODE_ENV": "\"production\"" },
    legalComments: "none",
    metafile: true,
    logLevel: "warning"
});

const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
const script = outputs.find((name) => name.endsWith(".js"));
const style = outputs.find((name) => name.endsWith(".css"));
if (script === undefined || style === undefined) throw new Error(`esbuild wrote no script or no stylesheet: ${outputs.join(", ")}`);
const page = readFileSync(join(here, "index.html"), "utf8")
    .replace("%SCRIPT%", `assets/${script}`)
    .replace("%STYLE%", `assets/${style}`);
writeFileSync(join(outDir, "index.html"), page);
for (const name of readdirSync(join(here, "public"))) copyFileSync(join(here, "public", name), join(outDir, name));

function filesUnder(dir) {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]);
}

const report = [];
for (const file of filesUnder(outDir)) {
    const bytes = readFileSync(file);
    const gzipped = gzipSync(bytes, { level: 9 });
    writeFileSync(`${file}.gz`, gzipped);
    writeFileSync(`${file}.br`, brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }));
    report.push(`  ${file.slice(outDir.length + 1)}  ${(bytes.length / 1024).toFixed(1)} kB, gzip ${(gzipped.length / 1024).toFixed(1)} kB`);
}
process.stdout.write(`web chat → dist/webui\n${report.join("\n")}\n`);
