# A fixture laid out like the reference library's code backend base, in aa-grade's own words.


class CodeExecutionParams(BaseModel):
    """FIXTURE what to run."""

    cmd: Annotated[str, Field(description=("FIXTURE a bash " "command."))]


def format_result(result):
    if result.error_kind:
        # Error case
        content = (
            f"<r>"
            f"<k>{result.error_kind}</k>"
            f"<d>{truncate_msg(result.stderr, MAX_LENGTH_SHELL_STDERR)}</d>"
        )
        if result.advice:
            content += f"<a>{result.advice}</a>"
        content += "</r>"
    else:
        # Success case
        content = (
            f"<r><c>{result.exit_code}</c>"
            f"<o>{truncate_msg(result.stdout, MAX_LENGTH_SHELL_STDOUT)}</o>"
            f"<e>{truncate_msg(result.stderr, MAX_LENGTH_SHELL_STDERR)}</e></r>"
        )


def get_code_exec_tool(description=None):
    return Tool(
        description=description
        or "FIXTURE runs a command.",
    )
