// The reference a JavaScript test compares against, written by lra_kit itself (tests/js_references.py) into a
// fresh temporary folder each run: `node --test tests/js` needs no other step, and a reference cannot go stale.
// Python: $LRA_KIT_PYTHON, else the checkout's .venv/bin/python (what `make test` builds), else python3.
// If Python cannot write it, loading the test file throws, and node --test reports that file as failed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

function python() {
  if (process.env.LRA_KIT_PYTHON) return process.env.LRA_KIT_PYTHON;
  const venv = join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

export function writeReference(kind) {
  const folder = mkdtempSync(join(tmpdir(), `lra-kit-js-${kind}-`));
  process.on("exit", () => rmSync(folder, { recursive: true, force: true }));
  const script = join(ROOT, "tests", "js_references.py");
  const env = { ...process.env, OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? "1" };
  const proc = spawnSync(python(), [script, kind, folder], { cwd: ROOT, env, encoding: "utf8", timeout: 600_000 });
  if (proc.error || proc.status !== 0) {
    const why = proc.error ? String(proc.error) : `exit status ${proc.status}\n${(proc.stderr ?? "").slice(-3000)}`;
    throw new Error(`${python()} ${script} ${kind} did not write the reference: ${why}`);
  }
  return JSON.parse(readFileSync(join(folder, "reference.json"), "utf8"));
}
