# A fixture laid out like the reference library's finish tool, in aa-grade's own words.


class FinishParams(BaseModel):
    """FIXTURE why stopping."""

    reason: Annotated[str, Field(description="FIXTURE why you stop.")]
    paths: Annotated[
        list[str], Field(description="FIXTURE files you hand back.")
    ]


async def _validating_finish_executor(params):
    if missing:
        return ToolResult(content=f"FIXTURE absent: {missing}.", success=False)


SIMPLE_FINISH_TOOL = Tool(
    name="finish",
    description="FIXTURE stop here.",
)
