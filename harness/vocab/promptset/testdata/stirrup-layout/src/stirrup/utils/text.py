# A fixture laid out like the reference library's text helpers, in aa-grade's own words.


def truncate_msg(msg, max_length):
    msg_len = len(msg)
    return (
        msg[: max_length // 2]
        + f"\n[FIXTURE truncated: {msg_len} over {max_length}]\n"
        + msg[-max_length // 2 :]
    )
