"""Writing stage results for the index-page tests."""

import csv


def write_csv(path, header, rows):
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header)
    w.writerows(rows)
