"""The shell both example agents offer their model: a command run with bash in the workspace,
its exit status and both streams (each clipped in the middle) as the tool's result."""

import subprocess

OUTPUT_LIMIT = 20000  # characters of each stream kept, as aa-grade's own loop keeps
TIMEOUT = 300  # seconds a command may take


def clip(text):
    if len(text) <= OUTPUT_LIMIT:
        return text
    half = OUTPUT_LIMIT // 2
    return f"{text[:half]}\n[... {len(text)} characters in all ...]\n{text[-half:]}"


def run_command(cmd):
    try:
        done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"the command ran out of time ({TIMEOUT} s)"
    return f"exit status {done.returncode}\nstdout:\n{clip(done.stdout)}\nstderr:\n{clip(done.stderr)}"
