# A fixture laid out like the reference library's local backend, in aa-grade's own words.


async def run_command(cmd):
    try:
        pass
    except Exception as exc:
        return CommandResult(error_kind="FIXTURE_refused")
    try:
        pass
    except TimeoutError:
        return CommandResult(
            stderr=f"FIXTURE stopped after {timeout} s",
            error_kind="FIXTURE_timeout",
        )
    except Exception as exc:
        return CommandResult(stderr=str(exc), error_kind="FIXTURE_failed")
