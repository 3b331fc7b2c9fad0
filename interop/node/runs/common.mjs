import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const require = createRequire(import.meta.url);
export const here = path.dirname(fileURLToPath(import.meta.url));
export const testdata = path.resolve(here, "..", "..", "testdata");

export function check(cond, msg) {
  if (!cond) {
    throw new Error(`check failed: ${msg}`);
  }
}
