"""Recall-quality evaluation on public benchmarks: loaders, metrics, data fetching, the runner.

``load_locomo`` and ``load_beir`` read LoCoMo (dialog turns as entries, questions with evidence
turns) and BEIR-format sets such as SciFact (abstracts as entries, judged queries); the metrics
(Recall@k, Hit@k, MRR, nDCG@10) follow their standard definitions; ``find_data`` and
``fetch_dataset`` locate or download the files (``locate_data``: either, as ``agentmemory eval``
does); ``evaluate_locomo``, ``evaluate_beir`` and
``evaluate`` build (and cache) the stores, run BM25, vector and hybrid recall, and return an
``EvalResult`` that prints as a table and writes JSON. Nothing here imports torch or chromadb
until a run needs them.
"""

from __future__ import annotations

from .beir import (
    BEIR_MAX_ENTRY_BYTES,
    BeirDataset,
    BeirDocument,
    BeirQuery,
    BeirReport,
    doc_entries,
    doc_id_names,
    load_beir,
)
from .download import (
    DATASETS,
    LOCOMO_SHA256,
    LOCOMO_URL,
    SCIFACT_URL,
    cache_dir,
    download,
    fetch_dataset,
    find_data,
    locate_data,
    repo_data_dir,
)
from .locomo import (
    CATEGORY_NAMES,
    LoadReport,
    LocomoConversation,
    LocomoDataset,
    LocomoQuestion,
    LocomoTurn,
    TurnFormat,
    dia_id_name,
    file_sha256,
    load_locomo,
    normalise_evidence,
    session_of,
    turn_entries,
)
from .metrics import (
    dcg_at_k,
    hit_at_k,
    mean,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    reciprocal_rank,
    score_ranking,
)
from .runner import (
    BEIR_MAX_SEQ_LENGTH,
    DEFAULT_KS,
    METHODS,
    STORE_CACHE_VERSION,
    EvalResult,
    QueryRun,
    RecallFn,
    evaluate,
    evaluate_beir,
    evaluate_locomo,
    reranker_for,
    results_path,
)

__all__ = [
    "BEIR_MAX_ENTRY_BYTES",
    "BEIR_MAX_SEQ_LENGTH",
    "CATEGORY_NAMES",
    "DATASETS",
    "DEFAULT_KS",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "METHODS",
    "SCIFACT_URL",
    "STORE_CACHE_VERSION",
    "BeirDataset",
    "BeirDocument",
    "BeirQuery",
    "BeirReport",
    "EvalResult",
    "LoadReport",
    "LocomoConversation",
    "LocomoDataset",
    "LocomoQuestion",
    "LocomoTurn",
    "QueryRun",
    "RecallFn",
    "TurnFormat",
    "cache_dir",
    "dcg_at_k",
    "dia_id_name",
    "doc_entries",
    "doc_id_names",
    "download",
    "evaluate",
    "evaluate_beir",
    "evaluate_locomo",
    "fetch_dataset",
    "file_sha256",
    "find_data",
    "hit_at_k",
    "load_beir",
    "load_locomo",
    "locate_data",
    "mean",
    "ndcg_at_k",
    "normalise_evidence",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "repo_data_dir",
    "reranker_for",
    "results_path",
    "score_ranking",
    "session_of",
    "turn_entries",
]
