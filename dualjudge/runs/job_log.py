"""The job log: every job of every session of a run, with its group and times, kept in the store as
jobs start and end (a killed session's too), and written to manifest.json["jobs"]."""

from __future__ import annotations

import json
import time

from dualjudge.inference.devices import DeviceGroup
from dualjudge.runs.schedule import Job
from dualjudge.storage.rows import JobRecord
from dualjudge.storage.store import Store

JOBS_META = "jobs"  # store meta key: every job of every session, as manifest.json["jobs"] lists them


def recorded_jobs(store: Store) -> list[JobRecord]:
    """Every job of every session of a run, as the store keeps them (manifest.json["jobs"])."""
    return [JobRecord.model_validate(j) for j in json.loads(store.get_meta(JOBS_META) or "[]")]


class JobLog:
    """This session's jobs (appended to `jobs`, the run report's list) after the earlier sessions'."""

    def __init__(self, store: Store, session: str, jobs: list[JobRecord]) -> None:
        self.store = store
        self.session = session
        self.jobs = jobs
        self._earlier = recorded_jobs(store)  # other sessions' jobs, kept as they are

    def started(self, job: Job, group: DeviceGroup | None, at: float | None = None, replica: bool = False) -> JobRecord:
        started = at if at is not None else round(time.time(), 3)
        record = JobRecord(
            model=job.model,
            stage=job.stage,
            group=group.label if group is not None else None,
            started_at=started,
            session=self.session,
            replica=replica,
        )
        self.jobs.append(record)
        self._save()
        return record

    def ended(self, record: JobRecord, loaded: bool) -> float:
        """The job (or the replica's part in it) has ended; returns the time, which a job that goes on in
        the same load starts at."""
        record.ended_at = ended = round(time.time(), 3)
        record.loaded = loaded
        self._save()
        return ended

    def failed(self, record: JobRecord, reason: str) -> None:
        record.failed = reason
        self.ended(record, False)

    def _save(self) -> None:
        self.store.set_meta(JOBS_META, json.dumps([j.model_dump() for j in self._earlier + self.jobs]))
