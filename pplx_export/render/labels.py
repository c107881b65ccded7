"""Label catalogs: every human-readable string the renderer emits, per language.

`en` is the default. `zh` keeps the seed's literal strings (sub-agent section, background
appendix heading, the three interruption tags) and the earlier tool's wording elsewhere.

Long because it is a catalog: one dataclass naming every label (with two small formatting
helpers) and its `en` and `zh` values; a new label or language adds lines here, not code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from pplx_export.parse import interruptions


# eq/repr off: generating them for ~90 fields is a third of this module's import time,
# which every parallel re-render pays before its workers start. Catalogs are compared by
# identity (there are two).
@dataclass(frozen=True, eq=False, repr=False)
class Labels:
    lang: str
    colon: str  # after a bold label
    sep: str  # between a label and its text
    lparen: str
    rparen: str
    # conversation.md header / turn skeleton
    mode: str
    author: str
    turns: str
    citations: str
    citations_n: str
    space: str
    turn: str
    query: str
    answer: str
    model_answer: str  # a council model's or a nested run's answer, as a bold label
    empty: str
    none: str
    plan: str
    work_process: str
    steps_n: str
    turn_citations: str
    step_log: str
    step_log_note: str
    # interruption tags
    tag_limit: str
    tag_awaiting: str
    tag_canceled: str
    # sub-agents
    step: str
    subagent: str
    subagent_work: str
    subagent_count: str
    stub_note: str
    prompt: str
    subagent_steps: str
    subagent_payload_steps: str
    conclusion: str
    subagent_conclusion: str
    subagent_sources: str
    cited: str  # the citations trailer of a nested workflow
    sources: str
    status: str
    unknown: str
    time: str
    run_id: str
    model: str
    # nested workflows
    nested: str
    background_task: str
    untitled: str
    has_conclusion: str
    no_conclusion: str
    no_steps: str
    recursion_limit: str
    # background appendix
    appendix_heading: str
    appendix_note: str
    # council
    council: str
    queries_n: str
    sources_n: str
    answer_chars: str
    round_: str
    rounds_n: str
    # The table of the models' conclusions, one row per model, above their folds.
    council_compare: str
    # A model's step-log entry that its workflow fold does not show, kept inside the fold.
    council_log: str
    # plain steps
    tool_input: str
    tool_output: str
    thinking: str
    web_search: str
    search_results: str
    read_pages: str
    research_report: str
    code: str
    output: str
    error_output: str
    attachments: str
    open_pages: str
    create_chart: str
    images: str
    unrendered: str
    payload_json: str
    council_research: str
    # workflow items
    searching: str
    task_list: str
    in_progress: str
    todo_changes: str
    asked_user: str
    multichoice: str
    free_text: str
    attachments_allowed: str
    question: str
    reply: str
    intermediate_answer: str
    nested_empty: str
    # files
    sources_title: str
    report_title: str
    nav_open: str
    nav_conversation: str
    nav_index: str
    last_update: str
    index_title: str
    index_date: str
    index_thread: str
    index_threads: str
    index_spaces: str
    sources_count: str  # the header's count of web pages shown
    turn_list: str
    artifact_file: str
    # shown once: pointers where a copy is left out, and what conversation.md notes
    to_answer: str
    to_conclusion: str
    answer_rewritten: str
    answer_rewritten_kept: str  # {link}: the hand-archived original
    answer_imported: str  # a turn only Perplexity's own data export holds (§9.8)
    answer_lost: str  # {what}: the loss line; the answer the raw entry holds was not read
    sources_lost: str
    related: str
    media: str
    stub_work: str
    stub_work_link: str
    # generated files
    files: str
    file_inline: str
    file_expired: str
    file_no_channel: str
    file_not_downloaded: str
    file_unlisted: str
    shared_files: str
    file_diff: str
    file_diff_n: str  # {n}, {total}
    input_: str

    def par(self, text: str) -> str:
        """` (text)` / `（text）`: the language's parenthesised aside ("" in a blank catalog)."""
        if not self.lparen and not self.rparen:
            return ""
        return f"{self.lparen}{text}{self.rparen}"

    def labelled(self, label: str, body: str) -> str:
        """`**label:**` above `body`, a blank line between (a run's prompt, answer, sources)."""
        return f"**{label}{self.colon}**\n\n" + body

    def code_facts(self, *facts: tuple[str, str]) -> list[str]:
        """`label: `value`` for each (label, value) with a value (a run's status line)."""
        return [f"{label}{self.sep}`{value}`" for label, value in facts if value]

    def tag(self, status: str | None, locked_reason: str | None = None) -> str:
        """Interruption tag for a workflow status ("" when completed or unknown)."""
        kind = interruptions.classify(status, locked_reason)
        return {
            interruptions.LIMIT_INTERRUPTED: self.tag_limit,
            interruptions.AWAITING: self.tag_awaiting,
            interruptions.CANCELED: self.tag_canceled,
        }.get(kind, "")


EN = Labels(
    lang="en",
    colon=":",
    sep=": ",
    lparen=" (",
    rparen=")",
    mode="Mode",
    author="Author",
    turns="Turns",
    citations="Citations",
    citations_n="citations: {n}",
    space="Space",
    turn="Turn",
    query="Query",
    answer="Answer",
    model_answer="Answer",
    empty="(empty)",
    none="(none)",
    plan="Plan",
    work_process="Work process",
    steps_n="steps: {n}",
    turn_citations="Citations of this turn",
    step_log="Step log (not in the workflow view)",
    step_log_note=(
        "Entries of the turn's step log that the workflow view above does not show "
        "(the two are separate copies and can diverge)."
    ),
    tag_limit="⏸ Interrupted: spending limit (content stops here)",
    tag_awaiting="⏸ Interrupted, can continue",
    tag_canceled="⛔ Canceled",
    step="Step",
    subagent="🤖 Sub-agent",
    subagent_work="Sub-agent work",
    subagent_count="{n}",
    stub_note=(
        "This turn is a subagent_result notification with no work of its own; below are "
        "the background sub-agent runs matched to it by time."
    ),
    prompt="Prompt (task instruction)",
    subagent_steps="Sub-agent work process",
    subagent_payload_steps="Sub-agent workflow",
    conclusion="Conclusion",
    subagent_conclusion="Conclusion",
    subagent_sources="Sources",
    cited="Sources",
    sources="Sources",
    status="Status",
    unknown="unknown",
    time="Time",
    run_id="Run",
    model="Model",
    nested="🧩 Nested workflow",
    background_task="🤖 Background task",
    untitled="untitled",
    has_conclusion="has conclusion",
    no_conclusion="no conclusion",
    no_steps="(no work steps recorded)",
    recursion_limit="(nested workflow: {name}, recursion limit reached)",
    appendix_heading="## Background tasks (not attributed to a turn)",
    appendix_note=(
        "These background sub-agent runs have no anchor in any turn and never sent a "
        "subagent_result notification (spending limit, cancellation, …), so they cannot be "
        "attributed to a turn; they are archived here as they are."
    ),
    council="🏛️ Model council",
    queries_n="queries: {n}",
    sources_n="sources: {n}",
    answer_chars="answer: {n} chars",
    round_="Round {n}",
    rounds_n="rounds: {n}",
    council_compare="Side by side",
    council_log="From the step log (not in the workflow view)",
    tool_input="Tool input",
    tool_output="Tool output",
    thinking="Thinking",
    web_search="Web search",
    search_results="Search results",
    read_pages="Read pages",
    research_report="Research report",
    code="Code",
    output="Output",
    error_output="Error output",
    attachments="Attachments",
    open_pages="Open pages",
    create_chart="Create chart",
    images="Generated images",
    unrendered="unrendered type",
    payload_json="Payload (JSON)",
    council_research="Council research",
    searching="Searching",
    task_list="Task list",
    in_progress="(in progress)",
    todo_changes="Changes",
    asked_user="Asked the user",
    multichoice="multiple choice",
    free_text="free-text answer allowed",
    attachments_allowed="attachments allowed",
    question="Q",
    reply="A",
    intermediate_answer="Answer text",
    nested_empty="(WORKFLOW_ITEM_WORKFLOW without steps)",
    sources_title="Sources",
    report_title="Research report",
    nav_open="Open on perplexity.ai",
    nav_conversation="Conversation",
    nav_index="Archive index",
    last_update="last update",
    index_title="Perplexity archive",
    index_date="Date",
    index_thread="Thread",
    index_threads="Threads",
    index_spaces="Spaces",
    sources_count="Sources",
    turn_list="Turns",
    artifact_file="Artifact file",
    to_answer="→ the final answer, below",
    to_conclusion="→ the conclusion, below",
    answer_imported=(
        "⇩ Imported from Perplexity's data export: the API did not serve this turn, and the"
        " export carries no sources, steps or files, so its [n] markers link nowhere."
    ),
    answer_rewritten=(
        "✎ Rewritten answer: the platform replaced this answer with an experiment variant"
        " (the original is not archived)."
    ),
    answer_rewritten_kept=(
        "✎ Rewritten answer: the platform replaced this answer with an experiment variant;"
        " the original, archived by hand: {link}."
    ),
    answer_lost=(
        "⚠ Answer not read: the raw entry holds an answer ({size} characters in `{where}`)"
        " in a shape this version of pplx-export does not read. It is kept in the raw files;"
        " a re-render by a version that reads it shows it here."
    ),
    sources_lost=(
        "⚠ Sources not read: the raw entry holds sources ({size} in `{where}`) that this"
        " version of pplx-export does not read; they are kept in the raw files."
    ),
    related="Related",
    media="Images and videos",
    stub_work="The sub-agent work reported in this turn is in {link}.",
    stub_work_link="its turn file",
    files="Files",
    file_inline="inline",
    file_expired="not downloaded: expired (the platform no longer serves it)",
    file_no_channel="not downloaded: no download channel (a file of the cloud workspace)",
    file_not_downloaded="not downloaded yet (`pplx-export assets-backfill --online` fetches it)",
    file_unlisted="not among the thread's files",
    shared_files="Shared files",
    file_diff="diff",
    file_diff_n="diff {n} of {total}",
    input_="Input",
)

ZH = Labels(
    lang="zh",
    colon="：",
    sep="：",
    lparen="（",
    rparen="）",
    mode="模式",
    author="作者",
    turns="轮次",
    citations="引文",
    citations_n="引文 {n}",
    space="空间",
    turn="轮次",
    query="提问",
    answer="回答",
    model_answer="答案",
    empty="（空）",
    none="（无）",
    plan="计划",
    work_process="工作过程",
    steps_n="{n} 步骤",
    turn_citations="本轮引文",
    step_log="步骤日志（工作流视图中未出现）",
    step_log_note="本轮步骤日志中、上方工作流视图未显示的条目（两者为独立副本，可能不一致）。",
    tag_limit="⏸ 限额中断（内容截至中断点）",
    tag_awaiting="⏸ 中断待续",
    tag_canceled="⛔ 已取消",
    step="步骤",
    subagent="🤖 子代理",
    subagent_work="子代理工作",
    subagent_count="{n} 个",
    stub_note="本轮为 subagent_result 通知（自身无工作过程）；以下为按时间关联到的后台子代理记录。",
    prompt="Prompt（任务指令）",
    subagent_steps="子代理工作过程",
    subagent_payload_steps="子代理工作流",
    conclusion="结论",
    subagent_conclusion="子代理结论",
    subagent_sources="子代理引文",
    cited="引文",
    sources="来源",
    status="状态",
    unknown="未知",
    time="时间",
    run_id="运行",
    model="模型",
    nested="🧩 嵌套工作流",
    background_task="🤖 后台任务",
    untitled="未命名",
    has_conclusion="有结论",
    no_conclusion="无结论",
    no_steps="（无工作步骤记录）",
    recursion_limit="（嵌套工作流：{name}，已达递归上限）",
    appendix_heading="## 后台任务（未归入轮次）",
    appendix_note=(
        "以下后台子代理负载既无轮次内锚点、也未等到 subagent_result 完成通知"
        "（限额中断/取消等原因），无法归入具体轮次，如实归档于线程末尾。"
    ),
    council="🏛️ 模型委员会",
    queries_n="检索 {n} 词",
    sources_n="来源 {n}",
    answer_chars="答案 {n} 字符",
    round_="第 {n} 轮",
    rounds_n="{n} 轮",
    council_compare="并列对比",
    council_log="步骤日志所载（工作流视图中未出现）",
    tool_input="工具输入",
    tool_output="工具输出",
    thinking="思考",
    web_search="检索网页",
    search_results="检索结果",
    read_pages="读取页面",
    research_report="生成研究报告",
    code="代码",
    output="输出",
    error_output="错误输出",
    attachments="附件",
    open_pages="打开页面",
    create_chart="创建图表",
    images="生成图片结果",
    unrendered="未渲染类型",
    payload_json="载荷（JSON）",
    council_research="模型委员会检索",
    searching="检索",
    task_list="任务清单",
    in_progress="（进行中）",
    todo_changes="变更",
    asked_user="向用户提问",
    multichoice="可多选",
    free_text="允许自由填写",
    attachments_allowed="允许附件",
    question="问",
    reply="答",
    intermediate_answer="回答文本",
    nested_empty="（WORKFLOW_ITEM_WORKFLOW）",
    sources_title="引文列表",
    report_title="研究报告",
    nav_open="在 perplexity.ai 打开",
    nav_conversation="对话",
    nav_index="存档索引",
    last_update="最后更新",
    index_title="Perplexity 存档",
    index_date="日期",
    index_thread="线程",
    index_threads="线程数",
    index_spaces="空间",
    sources_count="来源",
    turn_list="轮次",
    artifact_file="产物文件",
    to_answer="→ 见下方最终回答",
    to_conclusion="→ 见下方结论",
    answer_imported=(
        "⇩ 取自 Perplexity 的数据导出：API 未提供此轮；导出不含来源、步骤和文件，"
        "因此其 [n] 标记没有对应链接。"
    ),
    answer_rewritten="✎ 回答已被改写：平台以实验变体替换了此回答（原回答未存档）。",
    answer_rewritten_kept="✎ 回答已被改写：平台以实验变体替换了此回答；原回答已手动存档：{link}。",
    answer_lost=(
        "⚠ 回答未能读取：原始条目含有回答（`{where}` 中 {size} 个字符），"
        "但其格式本版本 pplx-export 尚不能读取。原始文件已保留；"
        "能读取该格式的版本重新渲染后会显示于此。"
    ),
    sources_lost=(
        "⚠ 来源未能读取：原始条目含有 {size} 个来源（`{where}` 中），"
        "本版本尚不能读取；原始文件已保留。"
    ),
    related="相关问题",
    media="图片与视频",
    stub_work="本轮报告的子代理工作见{link}。",
    stub_work_link="本轮文件",
    files="文件",
    file_inline="内联",
    file_expired="未下载：已过期（平台不再提供）",
    file_no_channel="未下载：无下载通道（云端工作区文件）",
    file_not_downloaded="尚未下载（`pplx-export assets-backfill --online` 可获取）",
    file_unlisted="不在本线程的文件列表中",
    shared_files="共享文件",
    file_diff="修改",
    file_diff_n="第 {n}/{total} 次修改",
    input_="输入",
)

CATALOGS = MappingProxyType({"en": EN, "zh": ZH})


def labels_for(lang: str) -> Labels:
    """The catalog for `lang` ("en" when unknown)."""
    return CATALOGS.get(lang, EN)


# --- The relations graph (relations/graph.md) ---


@dataclass(frozen=True)
class GraphLabels:
    title: str
    edges: str
    kind: str
    count: str
    same_space: str
    same_prompt: str
    references: str
    subagent_of: str
    threads_n: Callable[[int], str]
    none: str
    archived_note: str
    chain_sep: str
    more_n: Callable[[int], str]


GRAPH_EN = GraphLabels(
    title="Relations graph",
    edges="Edges",
    kind="kind",
    count="count",
    same_space="Same space (same_space)",
    same_prompt="Identical first queries (same_prompt, chained by time)",
    references="References (references)",
    subagent_of="Sub-agents (subagent_of; dst is the run id)",
    threads_n=lambda n: f"{n} thread" if n == 1 else f"{n} threads",
    none="(none)",
    archived_note=" (sub-agent thread archived: {uuid})",
    chain_sep=", ",
    more_n=lambda n: f"… and {n} more (all in edges.jsonl)",
)
GRAPH_ZH = GraphLabels(
    title="对话关系图",
    edges="边数",
    kind="关系类型",
    count="数量",
    same_space="空间共现（same_space）",
    same_prompt="首问全等簇（same_prompt，时序链式连边）",
    references="引用（references）",
    subagent_of="子代理（subagent_of，dst 为 toolu_X 运行 id）",
    threads_n=lambda n: f"{n} 个对话",
    none="（无）",
    archived_note="（子代理线程已归档: {uuid}）",
    chain_sep="，",
    more_n=lambda n: f"……另有 {n} 个（完整列表见 edges.jsonl）",
)


def graph_labels(lang: str) -> GraphLabels:
    """The relations graph's catalog for `lang` ("en" when unknown)."""
    return GRAPH_ZH if lang == "zh" else GRAPH_EN


# --- The space pages (spaces/<slug>.md, spaces/index.md) ---

PERMISSIONS_EN = {4: "owner", 3: "can manage", 2: "can edit", 1: "can view"}
PERMISSIONS_ZH = {4: "所有者", 3: "可管理", 2: "可编辑", 1: "可查看"}


@dataclass(frozen=True)
class SpaceLabels:
    spaces: str
    no_space: str
    no_space_intro: str
    slug: str
    uuid: str
    description: str
    owner: str
    members: str
    member: str
    username: str
    permission: str
    participants: str
    threads: str
    title: str
    author: str
    mode: str
    date: str
    archive: str
    folder: str
    not_exported: str
    meta_missing: str
    meta_error: str
    meta_via: str
    space: str
    page: str
    exported: str
    summary: str
    unknown: str
    permissions: dict[int, str]


SPACE_EN = SpaceLabels(
    spaces="Spaces",
    no_space="Threads in no space",
    no_space_intro="Threads that belong to no space.",
    slug="Slug",
    uuid="UUID",
    description="Description",
    owner="Owner",
    members="Members",
    member="member",
    username="username",
    permission="permission",
    participants="Participants",
    threads="Threads",
    title="title",
    author="author",
    mode="mode",
    date="date",
    archive="archive",
    folder="folder",
    not_exported="not exported",
    meta_missing="Members unknown: run `pplx-export spaces --fetch-meta`.",
    meta_error="Metadata unavailable: {error}",
    meta_via="Metadata as seen by account {account}.",
    space="space",
    page="page",
    exported="exported",
    summary="{spaces} spaces, {threads} threads ({no_space} in no space).",
    unknown="unknown",
    permissions=PERMISSIONS_EN,
)
SPACE_ZH = SpaceLabels(
    spaces="空间",
    no_space="不属于任何空间的对话",
    no_space_intro="以下对话不属于任何空间。",
    slug="Slug",
    uuid="UUID",
    description="描述",
    owner="所有者",
    members="成员",
    member="成员",
    username="用户名",
    permission="权限",
    participants="参与者",
    threads="对话",
    title="标题",
    author="作者",
    mode="模式",
    date="日期",
    archive="归档",
    folder="目录",
    not_exported="未导出",
    meta_missing="成员未知：请运行 `pplx-export spaces --fetch-meta`。",
    meta_error="无法获取元数据：{error}",
    meta_via="元数据来自账户 {account}。",
    space="空间",
    page="页面",
    exported="已导出",
    summary="{spaces} 个空间，{threads} 个对话（{no_space} 个不属于任何空间）。",
    unknown="未知",
    permissions=PERMISSIONS_ZH,
)


def space_labels(lang: str) -> SpaceLabels:
    """The space pages' catalog for `lang` ("en" when unknown)."""
    return SPACE_ZH if lang == "zh" else SPACE_EN
