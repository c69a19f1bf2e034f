"""``BaseTool``: the tool abstraction agents call, after LangChain's ``BaseTool``.

A tool has a ``name`` and ``description`` (shown to the model), an argument schema
(``args_schema``: a pydantic model class, v2 or v1, or a raw JSON-schema dict validated with
``jsonschema``), and ``_run``/``_arun``. What the model is shown is ``tool_call_schema``: the
schema with injected arguments removed and the description filled in.

Input: a string (for a one-argument schema), a dict of arguments, or a
:class:`~retrieval.tools.messages.ToolCall`. Output, one rule per entry point:

* ``invoke``/``ainvoke``: a ToolCall in gives a :class:`ToolMessage` out (``content``,
  ``artifact``, ``tool_call_id``, ``name``, ``status``); anything else gives the content alone,
  as in LangChain.
* ``run_with_artifact``/``arun_with_artifact``: always ``(content, artifact)``. This is how a
  ``response_format="content_and_artifact"`` tool's artifact is reached without a ToolCall;
  plain ``invoke`` leaves it out (logged at DEBUG) and never drops it from a ToolMessage.
* ``execute``/``aexecute``: the full :class:`ToolOutput` (content, artifact, status, call id),
  for executors such as a ToolsNode.

Errors: a :class:`~retrieval.tools.exceptions.ToolException` (any ``ToolInputError``) goes
through ``handle_tool_error`` and an argument validation error through
``handle_validation_error``: ``False`` raises, ``True`` uses the error text (a generic message
for validation), a string replaces it, a callable maps the exception to content; the status is
then ``"error"``. A missing injected argument is a missing field of the validation error,
so ``handle_validation_error`` decides, as in LangChain. Other exceptions are bugs and
propagate, and so does a misuse such as a ToolCall without an id for an
``InjectedToolCallId`` tool (``ConfigError``), which the model could not fix anyway.

Where LangChain's behaviour is the default and ours is an option: ``strict=True`` rejects
argument keys the schema does not know and exports OpenAI's strict form (LangChain drops such
keys); ``variadic="extra_keys"`` shows no fields for ``*args``/``**kwargs`` and lets keys
the schema does not name reach ``**kwargs`` (LangChain shows ``args``/``kwargs`` fields; see
:mod:`retrieval.tools.schema`). ``run``/``arun`` take LangChain's arguments;
``get_input_jsonschema`` is the full schema's JSON schema.

Keyword arguments of ``invoke`` supply injected arguments (see
:mod:`retrieval.tools.injected`); ``config`` is a :class:`RunConfig` handed to a tool
function that declares a ``RunConfig`` parameter, and its ``callbacks`` entry to one that
declares ``callbacks`` (hidden from the schema, injected at run time, as in LangChain).
``stream``/``astream``/``batch``/``abatch`` come from :class:`~retrieval.tools.runnable.
RunnableMethods`; ``is_single_input`` and ``timeout`` are LangChain's and Qwen-Agent's.
LangChain and LangGraph take a tool through the adapters of :mod:`retrieval.integrations`
(``to_langchain_tool``, ``to_langgraph_tools``); the tool itself is a plain object, as
LangChain's ``BaseTool`` is.
"""

from __future__ import annotations

import copy
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Mapping
from functools import partial
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainSerializer,
    PrivateAttr,
    RootModel,
    SkipValidation,
    create_model,
)

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.arguments import (
    config_parameter,
    declares_callbacks,
    is_validation_error,
    parse_arguments,
    split_input,
)
from ragtools.retrieval.tools.concurrency import (
    acall_with_timeout,
    call_with_timeout,
    in_thread,
    run_coroutine_sync,
)
from ragtools.retrieval.tools.exceptions import (
    ErrorHandler,
    SchemaAnnotationError,
    check_error_handler,
    handled_content,
)
from ragtools.retrieval.tools.injected import RunConfig
from ragtools.retrieval.tools.messages import ToolCall
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.pydantic_v1 import from_v1_model, is_v1_model
from ragtools.retrieval.tools.runnable import RunnableMethods
from ragtools.retrieval.tools.schema import (
    Variadic,
    create_schema_from_function,
    injected_fields,
    injected_parameters,
    subset_model,
    variadic_call,
)

__all__ = [
    "ArgsSchema",
    "BaseTool",
    "FunctionBackedTool",
    "ResponseFormat",
    "ToolInput",
    "ToolOutput",
]

logger = logging.getLogger(__name__)

ArgsSchema: TypeAlias = type[BaseModel] | dict[str, Any]
ToolInput: TypeAlias = str | dict[str, Any] | ToolCall
ResponseFormat: TypeAlias = Literal["content", "content_and_artifact"]
_VALIDATION_MESSAGE = "Tool input validation error"
_T = TypeVar("_T")


def _schema_for_json(schema: Any) -> Any:
    """``args_schema`` in a JSON dump: its JSON schema (a dict as is, a v1 model's
    ``schema()``), or its repr when it has no JSON-schema form, as LangChain dumps it."""
    if isinstance(schema, dict):
        return schema
    try:
        return schema.schema() if is_v1_model(schema) else schema.model_json_schema()
    except Exception:  # unresolved forward refs, arbitrary types: no JSON schema to give
        return repr(schema)


# JSON dumps (model_dump(mode="json")) must not fail on the class and callable fields; as
# annotations, so a subclass can still declare its own @field_serializer for them.
_JsonSchemaField = PlainSerializer(_schema_for_json, when_used="json-unless-none")
_JsonCallable = PlainSerializer(repr, when_used="json-unless-none")


class BaseTool(RunnableMethods, BaseModel, ABC):
    """A named, described, schema-checked callable for agents.

    Attributes:
        name: unique name the model calls the tool by.
        description: tells the model when and how to use the tool.
        args_schema: pydantic model class or JSON-schema dict of the arguments; ``None``
            means "inferred from ``_run``'s signature".
        return_direct: an agent should stop and return this tool's output as the answer.
        handle_tool_error: what to do with a ToolException (see module docstring).
        handle_validation_error: what to do with invalid arguments (see module docstring).
        response_format: ``"content_and_artifact"`` when ``_run`` returns
            ``(content, artifact)``.
        extras: provider-specific settings passed through untouched (e.g. cache control).
        metadata: free key/values for the application (logging, routing).
        timeout: seconds a run may take; past it the run becomes a
            :class:`~retrieval.tools.exceptions.ToolTimeoutError` (a ToolException, so
            ``handle_tool_error`` decides). ``None``: no limit. A sync tool keeps running in
            its worker thread after the timeout (Python cannot stop a thread), its result
            discarded.
        strict: reject argument keys the schema does not know (a validation error, so
            ``handle_validation_error`` decides) and export the schema with
            ``additionalProperties: false``, as OpenAI's ``strict`` function calling
            expects. Default False: unknown keys are dropped, as LangChain drops them.
        validate_inferred_args: for a subclass without ``args_schema``, validate a dict
            input against the schema inferred from ``_run`` (lax coercion such as ``"4"`` to
            ``4``, defaults, errors through ``handle_validation_error``). Default False: the
            dict reaches ``_run`` as it is (injected values filled in), as in LangChain, so a
            missing or unknown key is ``_run``'s ``TypeError``.
        variadic: how an inferred schema shows ``*args``/``**kwargs`` (see
            :mod:`retrieval.tools.schema`). Default ``"fields"``: optional ``args`` (array)
            and ``kwargs`` (object) fields, as LangChain shows them, spread into the call;
            ``"extra_keys"``: no fields, and ``**kwargs`` takes the keys the schema does not
            name.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str
    description: str = ""
    args_schema: Annotated[ArgsSchema | None, SkipValidation(), _JsonSchemaField] = None
    return_direct: bool = False
    handle_tool_error: Annotated[ErrorHandler, SkipValidation()] = False
    handle_validation_error: Annotated[ErrorHandler, SkipValidation()] = False
    response_format: ResponseFormat = "content"
    extras: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    timeout: float | None = None
    strict: bool = False
    validate_inferred_args: bool = False
    variadic: Variadic = "fields"

    _memo: dict[Any, Any] = PrivateAttr(default_factory=dict)
    _validates_inferred: ClassVar[bool] = False
    """Whether a schema this class infers always validates (its own inference, not _run's)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse ``args_schema: BaseModel`` (an instance type, where the class is meant)."""
        super().__init_subclass__(**kwargs)
        annotation = inspect.get_annotations(cls).get("args_schema")
        if annotation is BaseModel or annotation == "BaseModel":
            msg = (
                f"tool class {cls.__name__}: args_schema is annotated {annotation!r}, an "
                "instance of a model; annotate it type[BaseModel] (args_schema: "
                "type[BaseModel] = MySchema)"
            )
            raise SchemaAnnotationError(msg)

    def __init__(self, **data: Any) -> None:
        """Validate the fields, then the settings pydantic cannot check.

        Raises:
            ConfigError: empty name, an ``args_schema`` that is neither a pydantic model
                class nor a dict, an error handler of the wrong kind (raised directly, not
                wrapped in a pydantic ``ValidationError``).
        """
        super().__init__(**data)
        self._check_settings()

    def __getstate__(self) -> dict[Any, Any]:
        """Pickle without the memo: it holds classes built at run time, which pickle cannot
        find by name, and is rebuilt on first use (as LangChain drops its cached schema)."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_memo"):
            state = {**state, "__pydantic_private__": {**private, "_memo": {}}}
        return state

    def memoized(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, computed once per ``key`` and kept on this tool: for the schemas and
        views derived from its settings. Settings may be reassigned, so ``key`` names every
        one the value depends on (a changed setting is then a new key, never a stale value).
        """
        memo = self._memo
        if key not in memo:
            memo[key] = build()
        value: _T = memo[key]
        return value

    def _check_settings(self) -> None:
        """Check the settings pydantic cannot (schema kind, handler kinds, name)."""
        if not self.name.strip():
            msg = "tool name is empty; give every tool a short unique name"
            raise ConfigError(msg)
        schema = self.args_schema
        valid = (
            isinstance(schema, dict)
            or is_v1_model(schema)
            or (isinstance(schema, type) and issubclass(schema, BaseModel))
        )
        if schema is not None and not valid:
            msg = (
                f"tool {self.name!r}: args_schema must be a pydantic BaseModel subclass or "
                f"a JSON-schema dict, got {schema!r}"
            )
            raise ConfigError(msg)
        for option in ("handle_tool_error", "handle_validation_error"):
            check_error_handler(f"tool {self.name!r}", option, getattr(self, option))
        if self.timeout is not None and not self.timeout > 0:
            msg = f"tool {self.name!r}: timeout must be > 0 seconds or None, got {self.timeout}"
            raise ConfigError(msg)

    # --- schemas -------------------------------------------------------------------------

    def get_input_schema(self) -> type[BaseModel] | None:
        """The full argument model (injected fields included); ``None`` for a dict schema."""
        if isinstance(self.args_schema, dict):
            return None
        if is_v1_model(self.args_schema):  # validated through an equivalent v2 model
            key: Any = ("v1", self.args_schema)
            if key not in self._memo:
                self._memo[key] = from_v1_model(self.args_schema)
            converted: type[BaseModel] = self._memo[key]
            return converted
        if self.args_schema is not None:
            return self.args_schema
        return self.memoized(("inferred", type(self), self.variadic), self._infer_input_schema)

    def _model_schema(self) -> type[BaseModel]:
        schema = self.get_input_schema()
        if schema is None:
            msg = f"tool {self.name!r} has a JSON-schema dict args_schema, not a pydantic model"
            raise ConfigError(msg)
        return schema

    def _infer_input_schema(self) -> type[BaseModel]:
        """Schema used when ``args_schema`` is None: inferred from ``_run``."""
        return create_schema_from_function(self.name, self._run, variadic=self.variadic)

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The schema sent to a model: injected arguments removed, description filled in."""
        if isinstance(self.args_schema, dict):
            if self.description:
                return {**self.args_schema, "description": self.description}
            return dict(self.args_schema)
        full = self._model_schema()
        return self.memoized(
            ("call", full, self.name, self.description),
            lambda: subset_model(
                full, self.name, exclude=injected_fields(full), description=self.description
            ),
        )

    def tool_call_json_schema(self) -> dict[str, Any]:
        """``tool_call_schema`` as a JSON-schema dict (a fresh copy); closed with
        ``additionalProperties: false`` for a ``strict`` tool."""
        schema = self.tool_call_schema
        if isinstance(schema, dict):
            exported = copy.deepcopy(schema)
        else:  # an unresolved forward reference is named (PydanticUndefinedAnnotation)
            if not schema.__pydantic_complete__:
                schema.model_rebuild(raise_errors=True)
            exported = schema.model_json_schema()
        if self.strict and exported.get("additionalProperties") is not True:
            exported["additionalProperties"] = False
        return exported

    @property
    def InputType(self) -> Any:
        """What ``invoke`` takes, as a type (LangChain's ``Runnable.InputType``)."""
        return str | dict[str, Any] | ToolCall

    def get_input_jsonschema(self, config: RunConfig | None = None) -> dict[str, Any]:
        """The full argument schema (injected arguments included) as JSON schema, as
        LangChain's ``Runnable.get_input_jsonschema``; ``config`` is accepted and unused.
        A JSON-schema dict ``args_schema`` gives, as in LangChain, the schema of
        :attr:`InputType` (the dict itself is ``args_schema``)."""
        if isinstance(self.args_schema, dict):
            base: type[BaseModel] = RootModel[self.InputType]  # type: ignore[name-defined]
            root = create_model(self.get_name("Input"), __base__=base)
            return root.model_json_schema()
        return self._model_schema().model_json_schema()

    @property
    def args(self) -> dict[str, Any]:
        """The model-facing argument properties (JSON schema ``properties``)."""
        return dict(self.tool_call_json_schema().get("properties", {}))

    @property
    def _injected_args_keys(self) -> frozenset[str]:
        """Names of every injected argument (listed in the schema or only in the run
        target's signature); LangChain's name, read by LangGraph and LangChain's tests."""
        if isinstance(self.args_schema, dict):
            return frozenset(self._unlisted_injected(self.args_schema))
        schema = self._model_schema()
        return frozenset({**injected_fields(schema), **self._unlisted_injected(schema)})

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """LangChain's ``Runnable.get_name``: the tool name (or ``name``), plus ``suffix``
        (title-cased after a capitalised name, else joined by ``_`` and lower-cased)."""
        base = name or self.name
        if not suffix:
            return base
        return base + suffix.title() if base[:1].isupper() else f"{base}_{suffix.lower()}"

    @property
    def is_single_input(self) -> bool:
        """True when the model gives one argument (``**kwargs`` not counted), as in LangChain."""
        return len([key for key in self.args if key != "kwargs"]) == 1

    # --- entry points --------------------------------------------------------------------

    def invoke(self, input: ToolInput, config: RunConfig | None = None, **kwargs: Any) -> Any:
        """Run the tool: a ToolCall gives a ToolMessage, other input gives the content.

        Args:
            input: a string, a dict of arguments or a ToolCall.
            config: per-call settings, handed to a function declaring a ``RunConfig``
                parameter.
            **kwargs: values of injected arguments (``InjectedToolArg``), never from the
                model; they override the same keys in the call's ``args``.

        Returns:
            A :class:`ToolMessage` for a ToolCall input, else the content (use
            :meth:`run_with_artifact` to get the artifact without a ToolCall).

        Raises:
            ToolException: the tool failed and ``handle_tool_error`` is False.
            pydantic.ValidationError: invalid arguments (a missing injected one included, an
                unknown key with ``strict``) and ``handle_validation_error`` is False
                (``jsonschema.ValidationError`` for a dict schema).
            ConfigError: misuse: ToolCall id missing for an ``InjectedToolCallId`` tool, a
                content-and-artifact tool not returning a pair.
        """
        return self._deliver(self.execute(input, config, **kwargs))

    async def ainvoke(
        self,
        input: ToolInput,
        config: RunConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke`; a sync-only tool runs in a worker thread."""
        return self._deliver(await self.aexecute(input, config, **kwargs))

    def run(
        self,
        tool_input: str | dict[str, Any],
        verbose: bool | None = None,
        start_color: str | None = "green",
        color: str | None = "green",
        callbacks: Any = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        run_id: Any = None,
        config: RunConfig | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's ``run``: :meth:`invoke` with LangChain's arguments.

        ``tool_call_id`` makes the answer a :class:`ToolMessage`; ``callbacks``, ``tags``,
        ``metadata`` and ``run_name`` go into the config the tool function may declare;
        ``verbose``/colours/``run_id`` are LangChain's console and tracing settings and are
        accepted and ignored (ragtools logs instead).
        """
        return self.invoke(
            self._run_input(tool_input, tool_call_id),
            self._run_config(config, callbacks, tags, metadata, run_name),
            **kwargs,
        )

    async def arun(
        self,
        tool_input: str | dict[str, Any],
        verbose: bool | None = None,
        start_color: str | None = "green",
        color: str | None = "green",
        callbacks: Any = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        run_id: Any = None,
        config: RunConfig | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`run`."""
        return await self.ainvoke(
            self._run_input(tool_input, tool_call_id),
            self._run_config(config, callbacks, tags, metadata, run_name),
            **kwargs,
        )

    def _run_input(self, tool_input: str | dict[str, Any], call_id: str | None) -> ToolInput:
        if call_id is None:
            return tool_input
        args = tool_input if isinstance(tool_input, dict) else self._string_args(tool_input)
        return ToolCall(name=self.name, args=args, id=call_id, type="tool_call")

    def _string_args(self, text: str) -> dict[str, Any]:
        names = [key for key in self.args if key != "kwargs"]
        return {names[0]: text} if len(names) == 1 else {"tool_input": text}

    @staticmethod
    def _run_config(
        config: RunConfig | None,
        callbacks: Any,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        run_name: str | None,
    ) -> RunConfig:
        merged: dict[str, Any] = dict(config or {})
        extra = {"callbacks": callbacks, "tags": tags, "metadata": metadata, "run_name": run_name}
        merged.update({key: value for key, value in extra.items() if value is not None})
        return cast("RunConfig", merged)

    def execute(
        self,
        input: ToolInput,
        config: RunConfig | None = None,
        **kwargs: Any,
    ) -> ToolOutput:
        """Run the tool and return the full :class:`ToolOutput` (same errors as invoke)."""
        prepared = self._prepare(input, config, kwargs, for_async=False)
        if isinstance(prepared, ToolOutput):
            return prepared
        arguments, call_id = prepared
        args, arguments = self._run_arguments(arguments, for_async=False)
        try:
            run = partial(self._run, *args, **arguments)
            result = call_with_timeout(run, self.timeout, self.name)
        except Exception as exc:
            return self._handled(exc, call_id, validating=False)
        return self._output(result, call_id)

    async def aexecute(
        self,
        input: ToolInput,
        config: RunConfig | None = None,
        **kwargs: Any,
    ) -> ToolOutput:
        """Async :meth:`execute`."""
        prepared = self._prepare(input, config, kwargs, for_async=True)
        if isinstance(prepared, ToolOutput):
            return prepared
        arguments, call_id = prepared
        args, arguments = self._run_arguments(arguments, for_async=True)
        try:
            result = await acall_with_timeout(
                self._arun(*args, **arguments), self.timeout, self.name
            )
        except Exception as exc:
            return self._handled(exc, call_id, validating=False)
        return self._output(result, call_id)

    def parse_input(self, input: ToolInput, /, **kwargs: Any) -> dict[str, Any]:
        """The validated keyword arguments ``_run`` would get for ``input``, without running.

        Injected values are filled as :meth:`invoke` fills them (``kwargs`` over the call's
        ``args``; the call id for an ``InjectedToolCallId`` argument). A result cache keys on
        this (:func:`~retrieval.tools.cache.cache_key`), so calls the tool cannot tell apart
        (``"q"``, ``{"query": "q"}``, ``{"query": " q "}`` for a stripping schema) share an
        entry, and calls it can (another injected tenant) never do.

        Raises:
            pydantic.ValidationError: invalid arguments (``jsonschema.ValidationError`` for a
                dict schema), whatever ``handle_validation_error`` says.
            ToolInputError: a plain string for a tool with several arguments.
            ConfigError: input of the wrong kind, unknown keyword arguments, a missing
                injected value or call id.
        """
        tool_input, call_id = split_input(input)
        return self._parse_arguments(tool_input, call_id, kwargs)

    def _prepare(
        self,
        input: ToolInput,
        config: RunConfig | None,
        kwargs: dict[str, Any],
        *,
        for_async: bool,
    ) -> tuple[dict[str, Any], str | None] | ToolOutput:
        """The run's keyword arguments and tool call id, or the handled validation error."""
        tool_input, call_id = split_input(input)
        try:
            arguments = self._parse_arguments(tool_input, call_id, kwargs)
        except Exception as exc:
            return self._handled(exc, call_id, validating=True)
        config_arguments = RunConfig(**(config or {}))
        return self._with_config(arguments, config_arguments, for_async=for_async), call_id

    # --- to implement --------------------------------------------------------------------

    @abstractmethod
    def _run(self, **kwargs: Any) -> Any:
        """Do the work with validated keyword arguments; return the content (or a pair)."""

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        """Async work; by default ``_run`` in a worker thread so the event loop stays free."""
        return await in_thread(self._run, *args, **kwargs)

    def _run_target(self, *, for_async: bool) -> Callable[..., Any]:
        """What runs: ``_run``, or ``_arun`` when overridden (the default runs ``_run`` in a
        thread, as in LangChain)."""
        overridden = getattr(self._arun, "__func__", None) is not BaseTool._arun
        return self._arun if for_async and overridden else self._run

    def _config_parameter(self, *, for_async: bool) -> str | None:
        """Name of the run target's ``RunConfig`` parameter, if it declares one."""
        return config_parameter(self._run_target(for_async=for_async))

    def _run_arguments(
        self, arguments: dict[str, Any], *, for_async: bool
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``_run``/``_arun``'s positional and keyword arguments: the schema's fields for
        their ``*args``/``**kwargs`` spread into them (:func:`~retrieval.tools.schema.
        variadic_call`), the rest by keyword."""
        return self._spread(self._run_target(for_async=for_async), arguments)

    def _spread(
        self, target: Callable[..., Any], arguments: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        model = None if isinstance(self.args_schema, dict) else self.get_input_schema()
        if model is None:
            return (), arguments
        return variadic_call(target, arguments, model.model_fields)

    # --- internals -----------------------------------------------------------------------

    def _parse_arguments(
        self, tool_input: str | dict[str, Any], call_id: str | None, injected: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Validate the input and return the keyword arguments of ``_run`` (a hook)."""
        schema = self.args_schema if isinstance(self.args_schema, dict) else self._model_schema()
        return parse_arguments(
            self.name,
            schema,
            tool_input,
            call_id,
            injected,
            strict=self.strict,
            unlisted=self._unlisted_injected(schema),
            validate=self.args_schema is not None
            or self.validate_inferred_args
            or self._validates_inferred,
        )

    def _run_targets(self) -> tuple[Callable[..., Any] | None, ...]:
        """The functions whose parameters the validated arguments fill (``_arun`` too when
        overridden: an async-only tool declares its injected arguments there)."""
        overridden = getattr(self._arun, "__func__", None) is not BaseTool._arun
        return (self._run, self._arun if overridden else None)

    def _unlisted_injected(self, schema: ArgsSchema) -> dict[str, bool]:
        """Injected parameters of the run targets that ``schema`` does not list (a custom
        ``args_schema`` need not name them; LangChain still passes them through)."""
        if self.args_schema is None:
            return {}
        listed = set(schema.get("properties", {})) if isinstance(schema, dict) else set()
        if not isinstance(schema, dict):
            listed = set(schema.model_fields)
        key = ("unlisted", id(schema))
        if key not in self._memo:
            found: dict[str, bool] = {}
            for target in self._run_targets():
                found.update(injected_parameters(target))
            self._memo[key] = {k: v for k, v in found.items() if k not in listed}
        unlisted: dict[str, bool] = self._memo[key]
        return unlisted

    def _with_config(
        self, arguments: dict[str, Any], config: RunConfig, *, for_async: bool
    ) -> dict[str, Any]:
        """Add the run-time plumbing the target declares: a RunConfig and ``callbacks``."""
        name = self._config_parameter(for_async=for_async)
        if name:
            arguments = {**arguments, name: config}
        if self._takes_callbacks(for_async=for_async):
            arguments = {**arguments, "callbacks": config.get("callbacks")}
        return arguments

    def _takes_callbacks(self, *, for_async: bool) -> bool:
        """True when the run target declares ``callbacks`` (hidden from the schema, injected)."""
        return False

    def _handled(self, exc: Exception, call_id: str | None, *, validating: bool) -> ToolOutput:
        """Turn a handled error into an error output; re-raise anything else."""
        if validating and is_validation_error(exc):
            handler, default = self.handle_validation_error, _VALIDATION_MESSAGE
        elif isinstance(exc, ToolInputError):
            handler, default = self.handle_tool_error, (str(exc) or "Tool execution error")
        else:
            raise exc
        content = handled_content(handler, exc, default)
        logger.info("tool %s: %s handled as content: %s", self.name, type(exc).__name__, exc)
        return ToolOutput(content=content, status="error", tool_call_id=call_id)

    def _output(self, result: Any, call_id: str | None) -> ToolOutput:
        if self.response_format == "content_and_artifact":
            if not (isinstance(result, tuple) and len(result) == 2):
                msg = (
                    f"tool {self.name!r} has response_format='content_and_artifact', so it must "
                    f"return a (content, artifact) 2-tuple, but it returned "
                    f"{type(result).__name__}; return the pair or use response_format='content'"
                )
                raise ConfigError(msg)
            content, artifact = result
            return ToolOutput(content=content, artifact=artifact, tool_call_id=call_id)
        return ToolOutput(content=result, tool_call_id=call_id)

    def _deliver(self, output: ToolOutput) -> Any:
        if output.tool_call_id is not None:
            return output.to_message(self.name)
        if output.artifact is not None:
            logger.debug(
                "tool %s: artifact not returned by invoke (plain input); use a ToolCall or "
                "run_with_artifact to receive it",
                self.name,
            )
        return output.content


class FunctionBackedTool(BaseTool):
    """A tool that runs a sync ``func`` and/or an async ``coroutine`` (:class:`Tool`,
    :class:`StructuredTool`). Without ``coroutine``, ``ainvoke`` runs ``func`` in a worker
    thread. Without ``func``, ``invoke`` raises ``NotImplementedError``, as in LangChain,
    unless ``sync_over_async`` is set.

    Attributes:
        func: the sync function.
        coroutine: the async function.
        sync_over_async: let ``invoke`` run a coroutine-only tool in a fresh event loop (in a
            worker thread when a loop is already running), for sync callers that cannot
            await. Default False: sync invocation of such a tool is refused, as in LangChain.
    """

    func: Annotated[Callable[..., Any] | None, _JsonCallable] = None
    coroutine: Annotated[Callable[..., Awaitable[Any]] | None, _JsonCallable] = None
    sync_over_async: bool = False
    _validates_inferred: ClassVar[bool] = True

    def _await_in_sync(self, make: Callable[[], Awaitable[_T]]) -> _T:
        """``await make()`` from sync code when ``sync_over_async`` allows it."""
        if not self.sync_over_async:
            msg = (
                f"{type(self).__name__} does not support sync invocation: tool {self.name!r} "
                "has only a coroutine; call ainvoke, or set sync_over_async=True"
            )
            raise NotImplementedError(msg)
        return run_coroutine_sync(make)

    def _check_settings(self) -> None:
        """Require at least one of ``func`` and ``coroutine``."""
        super()._check_settings()
        if self.func is None and self.coroutine is None:
            msg = f"tool {self.name!r}: give func and/or coroutine"
            raise ConfigError(msg)

    def _run_targets(self) -> tuple[Callable[..., Any] | None, ...]:
        return (self.func, self.coroutine)

    def _run_arguments(
        self, arguments: dict[str, Any], *, for_async: bool
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """All by keyword: ``_run``/``_arun`` hand them on to the function
        (:meth:`_call_arguments`)."""
        return (), arguments

    def _call_arguments(
        self, kwargs: dict[str, Any], target: Callable[..., Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """How the validated arguments are passed to the function: by keyword, the fields
        for its ``*args``/``**kwargs`` spread."""
        return self._spread(target, kwargs)

    def _target(self, *, for_async: bool) -> Callable[..., Any] | None:
        return self.coroutine if for_async and self.coroutine else self.func or self.coroutine

    def _config_parameter(self, *, for_async: bool) -> str | None:
        return config_parameter(self._target(for_async=for_async))

    def _takes_callbacks(self, *, for_async: bool) -> bool:
        return declares_callbacks(self._target(for_async=for_async))

    def _run(self, **kwargs: Any) -> Any:
        if self.func is not None:
            args, kwargs = self._call_arguments(kwargs, self.func)
            return self.func(*args, **kwargs)
        coroutine = self.coroutine
        if coroutine is None:
            msg = f"tool {self.name!r} has neither func nor coroutine"
            raise ConfigError(msg)
        args, kwargs = self._call_arguments(kwargs, coroutine)
        return self._await_in_sync(lambda: coroutine(*args, **kwargs))

    async def _arun(self, **kwargs: Any) -> Any:  # type: ignore[override]
        if self.coroutine is None:
            return await super()._arun(**kwargs)
        args, kwargs = self._call_arguments(kwargs, self.coroutine)
        return await self.coroutine(*args, **kwargs)
