"""Golden model-regression data (JSON), recorded by ``oarlock conformance --record-goldens``."""
