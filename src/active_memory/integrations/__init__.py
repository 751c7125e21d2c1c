"""Framework integrations: recall in-process, run records from the framework's own history.

One module per framework, each behind its install extra, each over an open
:class:`~active_memory.host.ActiveRun`:

* :mod:`.claude_agent_sdk` (``active-memory[claude-agent-sdk]``): a PreToolUse hook callback,
  guidance appended to the system prompt, the record from the SDK's message stream;
* :mod:`.openai_agents` (``active-memory[openai-agents]``): a wrapper around each function tool,
  guidance in each agent's instructions, the record written by run hooks as the run goes;
* :mod:`.langgraph` (``active-memory[langgraph]``): a ``ToolNode`` tool-call wrapper, guidance
  for node prompts, the authored graph from the compiled graph, executions from its task events.

Cards reach the model with no process and no socket: the integrations call the run's recall
session directly (:meth:`~active_memory.host.ActiveRun.recall_tool`), so receipts, deliveries
and exposure are exactly the broker's (once per conversation, recorded only when handed over,
first and latest receipts kept). :mod:`._runs` is what the three share: executions with their
transcripts, the record, and the settled run's postmortem. See docs/integrations.md.
"""

from __future__ import annotations

from active_memory.integrations._runs import ExecutionLog, RunRecorder, authored_graph

__all__ = ["ExecutionLog", "RunRecorder", "authored_graph"]
