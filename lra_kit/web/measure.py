"""Time the exported models generating a whole digit in headless Chromium, and in PyTorch on the same machine.

``python -m lra_kit.web.measure [--out results/web/generation-chromium.json]`` opens the page's widget
(:func:`lra_kit.web.page.demo_html`, from disk, offline) in headless Chromium driven by selenium and runs each
panel alone: the first pixel given (0), the other 783 sampled at temperature 1 from seed 0, the same digit
``--repeats`` times for the fast panels (once for the re-run on the prefix, minutes a digit), after one untimed
warm-up digit of the fast panels so that the JIT's first compilations do not count as the first pixels' cost.

It records, per panel and run, the milliseconds of every pixel (the draw from the model's output, the model's
step, the count of the state's bytes; the page stamps its clock once between consecutive pixels and paints the
canvas between blocks of 50, untimed); their mean; the blocks of 50 pixels summed, each the fastest of the runs,
and the page's statistic of growth on them (:func:`lra_kit.web.page.end_over_start`: the fastest of the last
three blocks over the fastest of the first three); the wall time of the whole digit with the page painting as
it goes (the median run); the bytes of attention state kept at the end; and the page's peak JS heap
(``performance.memory``, precise). For reference it times lra_kit's own PyTorch generation of the same models
in this process (one thread, the same protocol, ``CausalLM.generate``'s steps).

Chromium's ``performance.now()`` ticks in 0.1 ms without cross-origin isolation: a single pixel of the RNN is
a tick or a few, a block of 50 pixels tens of ticks or more, and since consecutive pixels share their stamps, a
block's sum is one interval of the clock. On a shared machine the operating system interrupts the browser for
milliseconds at a time: a block it hits costs more, but rarely the same block in every run, hence the fastest of
the runs. The record says how busy the machine was (the load average before and after, and the cores).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import torch

from lra_kit.results import make_results, write_results
from lra_kit.web.page import (BLOCK, ENDS, MODELS, RECORD, STATIC, available_panels, demo_html, end_over_start,
                              fastest_blocks)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _summary(runs: list[list[float]], finished: bool = True) -> dict:
    """A panel's runs of one digit summed up: the mean milliseconds per pixel over all runs, the blocks of
    :data:`~lra_kit.web.page.BLOCK` pixels (each the fastest of the runs) and their end ÷ start
    (:func:`lra_kit.web.page.end_over_start`; None for a stopped run)."""
    row = {"pixels": len(runs[0]), "finished": finished, "repeats": len(runs),
           "ms_per_pixel": sum(map(sum, runs)) / sum(map(len, runs)), "block_pixels": BLOCK,
           "block_ms": [round(b, 4) for b in fastest_blocks(runs)],
           "ms_runs": [[round(x, 4) for x in ms] for ms in runs]}
    return {**row, "end_over_start": end_over_start(row)}


@torch.no_grad()
def python_times(name: str, method: str, seed: int = 0) -> dict:
    """lra_kit's generation of an exported model, timed step by step the way the page times its steps."""
    from lra_kit.web.export import load_web_model

    torch.set_num_threads(1)
    model = load_web_model(str(MODELS / f"{name}.json"))
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.zeros(1, 1, dtype=torch.long)
    ms = []
    start = time.perf_counter()
    if method == "recompute":  # CausalLM.generate(recurrent=False): the model on the whole prefix
        for _ in range(783):
            a = time.perf_counter()
            nxt = model._choose(model(tokens)[:, -1], False, 1.0, gen)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            ms.append(1000 * (time.perf_counter() - a))
    else:  # CausalLM.generate(recurrent=True): prefill, then one step per pixel
        h, states = model.encoder.prefill(model.embed(tokens))
        h = h[:, -1]
        for i in range(783):
            a = time.perf_counter()
            nxt = model._choose(model.log_probs(h), False, 1.0, gen)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            if i + 1 < 783:
                h, states = model.encoder.step(model.embed(nxt[:, None], offset=tokens.shape[1] - 1)[:, 0], states)
            ms.append(1000 * (time.perf_counter() - a))
    return {"model": name, "method": method, "seconds": time.perf_counter() - start, **_summary([ms])}


def _run_and_wait(session, panels: list[int], timeout: float = 1800.0) -> dict:
    """Start the widget's run of ``panels`` and poll for its record (one long script would outlast
    selenium's 120 s HTTP timeout)."""
    session.execute_script("window.__lrakitMeasure = null; document.querySelector('.lrakit-webgen')"
                           f".lrakitRun('generate', {panels}).then((r) => {{ window.__lrakitMeasure = r; }});")
    deadline = time.monotonic() + timeout
    while (result := session.execute_script("return window.__lrakitMeasure")) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the run of panels {panels} did not finish in {timeout} s")
        time.sleep(1.0)
    return result


def browser_times(panels, chromium: str, driver: str, seed: int = 0,
                  repeats: int = 5) -> tuple[list[dict], dict, int]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-precise-memory-info",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "measure.html"
            page.write_text("<!doctype html><meta charset='utf-8'><title>lra-kit web measure</title><body>"
                            + demo_html(static=STATIC.as_uri(), record={}, bench={}) + "</body>")
            session.get(page.as_uri())
            state = session.execute_script("return document.querySelector('.lrakit-webgen').dataset.state")
            if state != "ready":
                raise RuntimeError(f"the widget did not start (state {state!r})")
            session.execute_script(f"document.querySelector('.lrakit-seed').value = '{seed}';"
                                   "document.querySelector('.lrakit-temperature').value = '1';")
            # a warm-up digit from the fast panels, so that the JIT's first compilations are not timed
            fast = [i for i, (_, method) in enumerate(panels) if method != "recompute"]
            _run_and_wait(session, fast)
            for i, (name, method) in enumerate(panels):
                runs = [_run_and_wait(session, [i])["runs"][i] for _ in range(1 if method == "recompute" else repeats)]
                walls = sorted(r["wall"] / 1000 for r in runs)
                rows.append({"model": name, "method": method, "wall_seconds": walls[len(walls) // 2],
                             "bytes_kept": runs[0]["bytes"][-1],
                             **_summary([r["ms"] for r in runs], all(r["finished"] for r in runs))})
            peak = session.execute_script("return window.LraWebDemo.peakHeap()")
        caps = session.capabilities
        browser = {"name": caps.get("browserName"), "version": caps.get("browserVersion"), "headless": True,
                   "user_agent": session.execute_script("return navigator.userAgent")}
    finally:
        session.quit()
    return rows, browser, peak


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.web.measure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(RECORD),
                        help="the results file (default results/web/generation-chromium.json)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs of the same digit for each fast panel (default 5; the re-run on the prefix: 1)")
    args = parser.parse_args(argv)
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                    None)
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        raise SystemExit("measure: no Chromium and chromedriver (Debian: apt-get install chromium chromium-driver)")
    panels = available_panels()
    if not panels:
        raise SystemExit(f"measure: no exported models in {MODELS} (lra-kit export-web RUN_DIR {MODELS})")
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    if args.repeats < 1:
        raise SystemExit(f"measure: --repeats must be >= 1, got {args.repeats}")
    rows, browser, peak = browser_times(panels, chromium, driver, args.seed, args.repeats)
    python = [python_times(n, m, args.seed) for n, m in panels]
    wall = time.perf_counter() - start
    linear = [r for r in rows if r["method"] == "recurrent" and r["model"] == "mnist-linear"]
    from lra_kit.web.page import manifests

    models = {name: m["provenance"] for name, m in manifests().items()}
    metrics = {"rows": rows, "python_same_models": python, "peak_js_heap_bytes": peak,
               "linear_digit_seconds": linear[0]["wall_seconds"] if linear else None}
    config = {"panels": [f"{n}:{m}" for n, m in panels], "prompt": "the first pixel (0) given, 783 sampled",
              "temperature": 1.0, "seed": args.seed, "models": models,
              "timer": "performance.now() stamped once between consecutive pixels (each pixel: the draw from the "
                       "model's output, its step, the count of the state's bytes); the canvas painted between "
                       f"blocks of {BLOCK}, untimed; 0.1 ms ticks in Chromium",
              "growth": f"end_over_start: blocks of {BLOCK} pixels, each the fastest of the panel's runs; the "
                        f"fastest of the last {ENDS} over the fastest of the first {ENDS} "
                        "(lra_kit.web.page.end_over_start)",
              "repeats": {"fast panels": args.repeats, "recompute": 1},
              "python": "lra_kit CausalLM, torch.set_num_threads(1), the same protocol"}
    load_after, cores = os.getloadavg()[0], os.cpu_count()
    shared = (f"the machine was shared: its 1-minute load average was {load_before:.2f} before the run and "
              f"{load_after:.2f} after, on {cores} cores" if max(load_before, load_after) >= 0.5 else None)
    record = make_results(metrics=metrics, config=config, scale="web", steps=1, seed=args.seed, wall_s=wall,
                          device="cpu", experiment="web/generation-chromium", browser=browser,
                          hardware={"cpu": _cpu_name(), "cores": cores, "shared": shared,
                                    "load_average_1min": {"before": round(load_before, 2),
                                                          "after": round(load_after, 2)}})
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_results(record, args.out)
    for r in rows:
        growth = "–" if r["end_over_start"] is None else f"{r['end_over_start']:.2f}"
        print(f"{r['model']:>14} {r['method']:>9}: {r['ms_per_pixel']:.3f} ms/pixel, end ÷ start {growth}, "
              f"digit {r['wall_seconds']:.2f} s, keeps {r['bytes_kept']:,} B")
    print(f"peak JS heap {peak:,} B; {browser['name']} {browser['version']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
