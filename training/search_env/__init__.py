"""The search agent's environment, in one package: the page tools it calls and what they show
it, its episodes in the model's chat template, and its cold-start scripts.

    env.py           SearchEnv: the `agent:` config section over datagen.tools.PageTools; the
                     tag format (parse_action), tool calls as observation text or `error: ...`
    observations.py  how search hits and pages read as text (snippets, best sentences, cuts)
    chat.py          chat-template rendering: one render, one continuation, one end-of-turn
    turns.py         an episode's turns: token ids through an engine, or chat messages
    agent.py         SearchAgentWorkflow (run_episode, run_chat: the agent loop, rewards),
                     agent_workflows (a run's config -> its training and held-out agents)
    warm.py          scripted episodes for the supervised warm start / cold start
    spike.py         the learning spike's warehouse (a build's one-hop number questions)
"""

from training.search_env.agent import SearchAgentWorkflow, agent_metrics, agent_workflows
from training.search_env.env import (NO_TOOL_PROMPT, SYSTEM_PROMPT, Action, SearchEnv,
                                     parse_action)

__all__ = ["NO_TOOL_PROMPT", "SYSTEM_PROMPT", "Action", "SearchAgentWorkflow", "SearchEnv",
           "agent_metrics", "agent_workflows", "parse_action"]
