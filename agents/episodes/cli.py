"""``evosyn reward serve``: the reward server over a campaign's verified tasks or an export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evosyn.cli_common import ConfigPath, LakeOption, SetOption, fail

reward_app = typer.Typer(
    help="Serve rewards: the replay verifier's verdict on trajectories, over HTTP.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@reward_app.callback()
def _group() -> None:
    """Serve rewards (a group, so that ``serve`` keeps its name with one command)."""


@reward_app.command("serve")
def serve_command(
    campaign_id: Annotated[
        str | None, typer.Option("--campaign", help="Serve this campaign's verified tasks.")
    ] = None,
    tau2_dir: Annotated[
        Path | None,
        typer.Option("--tau2-dir", help="Serve the tasks of an `evosyn export tau2` folder."),
    ] = None,
    domain: Annotated[
        str | None,
        typer.Option("--domain", help="Domain of inline tasks (default: the task set's)."),
    ] = None,
    round: Annotated[int | None, typer.Option("--round", help="Only this round's tasks.")] = None,
    up_to: Annotated[int | None, typer.Option("--up-to", help="Rounds up to R.")] = None,
    policy: Annotated[
        str,
        typer.Option("--policy", help="Policy-model check: synthetic (default), all or off."),
    ] = "synthetic",
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8808,
    lake_root: LakeOption = None,
    config: ConfigPath = None,
    overrides: SetOption = None,
) -> None:
    """Answer POST /reward and /rewards with reward and reasons (GET /health to probe)."""
    from evosyn.agents.episodes.server import RewardService, serve
    from evosyn.agents.episodes.tasks import TaskSet, TaskSetError
    from evosyn.config import ConfigError, load_config
    from evosyn.storage import Lake, LakeError

    if campaign_id is not None and tau2_dir is not None:
        fail("--campaign and --tau2-dir exclude each other", 2)
    if campaign_id is None and tau2_dir is None and domain is None:
        fail("give --campaign, --tau2-dir or --domain (inline tasks only)", 2)
    if policy not in ("synthetic", "all", "off"):
        fail(f"--policy must be synthetic, all or off, not {policy!r}", 2)
    tasks = None
    try:
        if campaign_id is not None:
            cfg = load_config(config, overrides or [])
            root = lake_root or cfg.lake.root
            lake = Lake(root, cfg.lake.s3_endpoint, cfg.lake.cache_dir, create=False)
            tasks = TaskSet.from_lake(lake, campaign_id, round=round, up_to=up_to)
        elif tau2_dir is not None:
            tasks = TaskSet.from_tau2_export(tau2_dir)
    except (ConfigError, LakeError, TaskSetError) as exc:
        fail(str(exc), 2)
    service = RewardService(tasks, domain=domain, policy=policy)
    count = f"{len(tasks)} tasks" if tasks is not None else "inline tasks"
    typer.echo(f"reward server on http://{host}:{port} ({count}, domain {service.domain})")
    serve(service, host=host, port=port)


def main() -> None:
    """``python -m evosyn.agents.episodes.cli``: the same commands without ``evosyn``."""
    reward_app()


if __name__ == "__main__":
    main()
