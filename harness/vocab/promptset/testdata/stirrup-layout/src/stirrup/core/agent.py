# A fixture laid out like the reference library's agent module, in aa-grade's own words.


def _num_turns_remaining_msg(number_of_turns_remaining: int) -> UserMessage:
    if number_of_turns_remaining == 1:
        return UserMessage(content="FIXTURE final turn now.")
    return UserMessage(
        content=f"FIXTURE {number_of_turns_remaining} turns to go. "
        "Keep at it.",
    )


class Agent:
    def _build_system_prompt(self) -> str:
        parts = []
        if "user_input" in self._active_tools:
            parts.append(" FIXTURE you may ask.")
        else:
            parts.append(" FIXTURE nobody answers.")
        if self._system_prompt:
            parts.append(f"\n\nFIXTURE the caller says:\n{self._system_prompt}")
        return "".join(parts)

    async def run_tool(self, tool_call):
        try:
            pass
        except ValidationError:
            LOGGER.debug("arguments did not validate")
            result = ToolResult(content="FIXTURE bad arguments", success=False)
        else:
            LOGGER.debug(f"{tool_call.name} which is not in the tools list")
            result = ToolResult(content=f"FIXTURE no tool {tool_call.name}", success=False)

    async def step(self, assistant_message):
        for tool_call in assistant_message.tool_calls:
            if reject_all_finish_calls and tool_call.name in self._finish_tools:
                tool_message = ToolMessage(
                    content=(
                        f"FIXTURE {tool_call.name} twice "
                        f"({sorted(set(finish_call_names))}); "
                        "one at a time."
                    ),
                )

    async def summarize_messages(self, messages):
        acknowledgement_msg = UserMessage(content="FIXTURE noted.")

    async def run(self):
        if not tool_messages and not next_turn_will_show_warning:
            msgs.extend([UserMessage(content="FIXTURE go on")])
