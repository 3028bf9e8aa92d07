"""``runplan calibrate``: fit the time model's few physical constants to step times measured on a cluster.

Pure functions from typed inputs to typed outputs:

* :mod:`~runplan.calibrate.measured`: the MEASURED.yaml schema and the one mapping from a measured run to a
  :class:`~runplan.parallel.layout.ParallelRequest` (:func:`~runplan.calibrate.measured.measured_request`);
* :mod:`~runplan.calibrate.published`: ``benchmarks/published_runs.yaml`` rows as measured runs;
* :mod:`~runplan.calibrate.constants`: which Efficiency fields are fitted, their bounds and sources;
* :mod:`~runplan.calibrate.calibration`: the calibration file (constants per GPU family, with provenance);
* :mod:`~runplan.calibrate.fit`: predict, fit (bounded least squares on log errors), identifiability,
  leave-one-out and leave-one-source-out.
"""
