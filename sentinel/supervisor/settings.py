"""The `system:` section of the operator's /etc/sentinel/config.yaml (read by the supervisor only).

    default_model: ollama/qwen3:4b        # a run's model when neither `--model` nor the agent's profile names one
    providers: {ollama: {base_url: http://127.0.0.1:11434/v1}}
    system:
      models: [ollama/*, openai/gpt-5-mini]   # what runs may use (globs allowed); default: default_model only
      agents:
        bars_agent: {models: [ollama/*], default_model: ollama/qwen3:4b}
      start_muzzle: true                  # start Muzzle as its own user whenever none answers
      host: web1                          # this host's name on a shared store (default: the hostname)
    store: postgresql://sentinel@db.example/sentinel   # many hosts, one store (docs/system-mode.md)

An agent's own ~/.sentinel (its config.yaml and profiles) can only choose among what this allows: a run
token names exactly the run's model and the operator's judge models.
"""

from __future__ import annotations

import fnmatch

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentModels(_Strict):
    models: list[str] | None = Field(None, description="What this agent's runs may use (within system.models).")
    default_model: str | None = Field(None, description="This agent's model when its run and profile name none.")


class SystemSettings(_Strict):
    models: list[str] = Field(default_factory=list, description="provider/model names or globs runs may use; "
                                                                "empty: only default_model.")
    agents: dict[str, AgentModels] = Field(default_factory=dict, description="Per agent: a narrower list, a default.")
    start_muzzle: bool = Field(True, description="The supervisor starts (and restarts) Muzzle as its own user "
                                                 "whenever none answers on muzzle.host:muzzle.port.")
    host: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
                             description="This host's name on a shared store (`store:`), in run ids and "
                                         "listings; default: the machine's hostname.")

    def allowed(self, agent: str, default_model: str) -> list[list[str]]:
        """The lists a model must match, every one of them, to be used by `agent`."""
        lists = [self.models or [default_model]]
        own = self.agents.get(agent)
        if own is not None and own.models is not None:
            lists.append(own.models)
        return lists

    def allows(self, agent: str, default_model: str, model: str) -> bool:
        return all(any(fnmatch.fnmatchcase(model, p) for p in patterns)
                   for patterns in self.allowed(agent, default_model))

    def default_for(self, agent: str, default_model: str) -> str:
        own = self.agents.get(agent)
        return own.default_model if own is not None and own.default_model else default_model
