"""The names LangChain's tool tests import, mapped to ragtools.

The runner (``test_suite.py``) rewrites the import lines of langchain-core's
``tests/unit_tests/test_tools.py`` and ``tests/unit_tests/utils/test_function_calling.py``
so that ``langchain_core.tools``, ``langchain_core.tools.base`` and
``langchain_core.utils.function_calling`` resolve here. Every public name ragtools has is
ours; the rest (private helpers such as ``_format_output`` or ``_create_subset_model``, and
``tool_example_to_messages``) stay LangChain's, and the tests that only exercise them are
listed as not applicable in ``expected.txt``.

``create_retriever_tool`` is ours with the options that give LangChain's retriever tool
(``response_format="content"``, ``artifact="documents"``, the bare ``page_content`` with no
budget; see :mod:`ragtools.retrieval.tools.retriever_tool`): our defaults are the package's
contract (cited content, the hits as artifact), and the suite checks that the options reach
LangChain's behaviour.
"""

from __future__ import annotations

import functools

from langchain_core.tools import base as _lc_base
from langchain_core.utils import function_calling as _lc_fc

from ragtools.retrieval.tools import (
    BaseTool,
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    Tool,
    ToolException,
    convert_runnable_to_tool,
    convert_to_openai_tool,
    create_schema_from_function,
    tool,
)
from ragtools.retrieval.tools.base import ArgsSchema
from ragtools.retrieval.tools.exceptions import SchemaAnnotationError
from ragtools.retrieval.tools.render import convert_to_openai_function
from ragtools.retrieval.tools.retriever_tool import create_retriever_tool as _create_retriever_tool

create_retriever_tool = functools.partial(
    _create_retriever_tool,
    response_format="content",
    artifact="documents",
    document_prompt="{page_content}",
    max_content_chars=None,
)

# LangChain-only helpers (internals of langchain_core.tools.base / function_calling).
TOOL_MESSAGE_BLOCK_TYPES = _lc_base.TOOL_MESSAGE_BLOCK_TYPES
_DirectlyInjectedToolArg = _lc_base._DirectlyInjectedToolArg
_format_output = _lc_base._format_output
_is_message_content_block = _lc_base._is_message_content_block
_normalize_message_content = _lc_base._normalize_message_content
get_all_basemodel_annotations = _lc_base.get_all_basemodel_annotations
_convert_typed_dict_to_openai_function = _lc_fc._convert_typed_dict_to_openai_function
_parse_google_docstring = _lc_fc._parse_google_docstring
convert_to_json_schema = _lc_fc.convert_to_json_schema
tool_example_to_messages = _lc_fc.tool_example_to_messages

__all__ = [
    "TOOL_MESSAGE_BLOCK_TYPES",
    "ArgsSchema",
    "BaseTool",
    "InjectedToolArg",
    "InjectedToolCallId",
    "SchemaAnnotationError",
    "StructuredTool",
    "Tool",
    "ToolException",
    "convert_runnable_to_tool",
    "convert_to_json_schema",
    "convert_to_openai_function",
    "convert_to_openai_tool",
    "create_retriever_tool",
    "create_schema_from_function",
    "get_all_basemodel_annotations",
    "tool",
    "tool_example_to_messages",
]
