"""The config text of a small local self-play run (sf-fleet run) of single
fights over one weak, strong and elite encounter each, one thread a worker
playing two fights at a time: what the Python tests and benchmarks play to
get real labels."""


def fights_config(name: str, output_dir: str, seed: int, count: int, job_size: int,
                  simulations: int, trees: int, workers: int, start: str | None = None) -> str:
    """Seeds [0, count) in jobs of `job_size`, searched with `simulations`
    simulations over `trees` trees by `workers` workers; `start` is the
    fights' start (play.start; None leaves the default)."""
    return ("run: {name: %s, output_dir: \"%s\", seed: %d}\n" % (name, output_dir, seed)
            + "seeds: {start: 0, count: %d, job_size: %d}\n" % (count, job_size)
            + "play:\n  mode: fights\n"
            + ("  start: %s\n" % start if start is not None else "")
            + "  encounters: {weak: 1, strong: 1, elite: 1}\n"
            + "search: {simulations: %d, trees: %d}\n" % (simulations, trees)
            + "workers: {count: %d, threads: 1, fights_per_thread: 2}\n" % workers
            + "coordinator: {endpoint: \"tcp://127.0.0.1:*\"}\n")
