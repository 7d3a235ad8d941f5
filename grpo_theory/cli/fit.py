"""``grpo-theory fit LOG``: fit the reward curve of a training log with the theory's models and forecast it."""

from __future__ import annotations

import json
import math

from grpo_theory.validate import ParameterError

NAME = "fit"
HELP = ("Fit a training log's reward curve (single exponential, L3 oscillator, mean-field, "
        "difficulty mixture); R^2, AIC/BIC, standard errors, mechanistic reading, forecast.")


def add_log_arguments(parser) -> None:
    """Arguments shared by ``fit`` and ``diagnose``: the log and how to read it."""
    from grpo_theory.runs.logs import FORMATS

    parser.add_argument("log", metavar="LOG", help="log file: TRL trainer_state.json, verl console "
                        "log or JSONL, W&B CSV export, generic CSV/JSONL with a step column")
    parser.add_argument("--format", default="auto", choices=("auto",) + FORMATS,
                        help="log format (default: detect from the content)")
    parser.add_argument("--metric", default=None, help="reward metric (default per format: TRL "
                        "'reward', verl 'critic/score/mean')")
    parser.add_argument("--run", default=None, help="run name in a multi-run W&B CSV")
    parser.add_argument("--step-column", default=None, help="step column of a generic CSV/JSONL")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="rename a column/metric (repeatable), e.g. --rename acc=reward")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def load_log(args):
    from grpo_theory.runs.logs import read_log

    rename = {}
    for item in args.rename:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise ParameterError("--rename", item, "OLD=NEW")
        rename[old] = new
    return read_log(args.log, args.format, run=args.run, step_column=args.step_column,
                    rename=rename or None)


def add_arguments(parser) -> None:
    from grpo_theory.runs.fitting import MODEL_NAMES

    add_log_arguments(parser)
    parser.add_argument("--train-fraction", type=float, default=None, metavar="F",
                        help="fit on the first fraction F of the steps and forecast the rest")
    parser.add_argument("--models", default=None,
                        help="comma-separated subset of " + ", ".join(MODEL_NAMES))
    parser.add_argument("--plot", default=None, metavar="FILE",
                        help="write a figure (data, fits, forecast band) to FILE")


def _fmt(x, spec=".4g"):
    return "n/a" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def run(args) -> int:
    from grpo_theory.runs.fitting import fit_log

    log = load_log(args)
    models = None
    if args.models:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
    result = fit_log(log, args.metric, train_fraction=args.train_fraction, models=models)
    objects = result.pop("_objects")
    if args.plot:
        from grpo_theory.runs.fitting import plot_fit
        plot_fit(objects, args.plot, title=f"{log.source}: {result['metric']}")
        result["plot"] = args.plot
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
        return 0
    print(f"{result['source']} ({result['format']}), metric {result['metric']}: "
          f"{result['n']} points, steps {_fmt(result['first_step'], 'g')}..{_fmt(result['last_step'], 'g')}")
    for w in result["warnings"]:
        print(f"  warning: {w}")
    print(f"    {'model':<16} {'R^2':>8} {'AIC':>11} {'BIC':>11} {'plateau':>9} {'t90 (steps)':>12}")
    for name, m in result["models"].items():
        mark = "*" if name == result["best"] else " "
        print(f"  {mark} {name:<16} {_fmt(m['r2'], '.4f'):>8} {_fmt(m['aic'], '.1f'):>11} "
              f"{_fmt(m['bic'], '.1f'):>11} {_fmt(m['plateau'], '.4f'):>9} "
              f"{_fmt(m['time_to_90_steps'], '.1f'):>12}")
    print("  (* = best by AIC" + ("" if result["best_bic"] == result["best"] else
                                  f"; best by BIC: {result['best_bic']}") + ")")
    best = result["models"][result["best"]]
    print(f"best model (AIC): {result['best']}   {best['formula']}")
    print("  parameters ± standard error (independent-noise lower bounds):")
    for k, v in best["params"].items():
        print(f"    {k} = {_fmt(v)} ± {_fmt(best['stderr'].get(k))}")
    print("  mechanistic reading:")
    for k, v in best["reading"].items():
        if k != "note":
            print(f"    {k:<32} {v if isinstance(v, str) else _fmt(v)}")
    if best["reading"].get("note"):
        print(f"    ({best['reading']['note']})")
    if "forecast" in result:
        fc = result["forecast"]
        print(f"forecast: fitted on {fc['n_train']} points (to step {_fmt(fc['split_step'], 'g')}), "
              f"{fc['n_holdout']} held out; best on training {fc['best']}: holdout RMSE "
              f"{_fmt(fc['holdout_rmse'])}, plateau {_fmt(fc['plateau'])}, 90 % at step "
              f"{_fmt(fc['step_90'], '.1f')}")
        for name, m in fc["models"].items():
            mark = "*" if name == fc["best"] else " "
            print(f"  {mark} {name:<16} holdout RMSE {_fmt(m['holdout_rmse'])}  "
                  f"plateau {_fmt(m['plateau'])}  R^2 (train) {_fmt(m['r2_train'], '.4f')}")
    return 0
