"""Recall-quality evaluation on public benchmarks: loaders, metrics, data fetching, the runner.

``load_locomo`` and ``load_beir`` read LoCoMo (dialog turns as entries, questions with evidence
turns) and BEIR-format sets such as SciFact (abstracts as entries, judged queries); the metrics
(Recall@k, Hit@k, MRR, nDCG@10) follow their standard definitions; ``find_data`` and
``fetch_dataset`` locate or download the files. Nothing here imports torch or chromadb until a run
needs them.
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
    turn_entries,
)
from .metrics import (
    dcg_at_k,
    hit_at_k,
    mean,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    score_ranking,
)

__all__ = [
    "BEIR_MAX_ENTRY_BYTES",
    "CATEGORY_NAMES",
    "DATASETS",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "SCIFACT_URL",
    "BeirDataset",
    "BeirDocument",
    "BeirQuery",
    "BeirReport",
    "LoadReport",
    "LocomoConversation",
    "LocomoDataset",
    "LocomoQuestion",
    "LocomoTurn",
    "TurnFormat",
    "cache_dir",
    "dcg_at_k",
    "dia_id_name",
    "doc_entries",
    "doc_id_names",
    "download",
    "fetch_dataset",
    "file_sha256",
    "find_data",
    "hit_at_k",
    "load_beir",
    "load_locomo",
    "mean",
    "ndcg_at_k",
    "normalise_evidence",
    "recall_at_k",
    "reciprocal_rank",
    "repo_data_dir",
    "score_ranking",
    "turn_entries",
]
