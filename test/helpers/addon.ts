/**
 * The CPU addon this run of the suite is on: "prebuilt" when MAPLE_TEST_ADDON says so
 * (scripts/run-tests.js swaps node-llama-cpp's stock addon in for it), else "patched", the one
 * `npm install` rebuilds (docs/node-llama-cpp.md). test/engine/samplingInDecode.test.ts and
 * directSteps.test.ts check that the addon in place is the one named.
 */
export const testAddon: "patched" | "prebuilt" = process.env.MAPLE_TEST_ADDON === "prebuilt" ? "prebuilt" : "patched";

/**
 * The `skip` option of a test of a native piece only the patched addon has (`piece` names it):
 * its reason on the prebuilt run, else false. Not a skip when the piece is missing from a run
 * that expects it: a failed rebuild must fail those tests, not hide them.
 */
export function needsPatchedAddon(piece: string): string | false {
    return testAddon === "prebuilt" && `needs the patched addon (${piece}); this run is on the prebuilt one`;
}
