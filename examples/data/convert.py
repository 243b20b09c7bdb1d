# convert.py - how the .npy files beside it were made: scikit-learn's
# copies of two UCI data sets (as Debian's python3-sklearn installs them)
# read from their CSV text and written as .npy, the rows put in one fixed
# random order so that a split into the first 80% and the last 20% of the
# rows is a random split.  Needs numpy; run as
#   python3 convert.py /usr/lib/python3/dist-packages/sklearn/datasets/data
import gzip
import os
import sys

import numpy as np


def rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.strip().split(",") for line in f if line.strip()]


def main(src):
    out = os.path.dirname(os.path.abspath(__file__))
    # breast_cancer.csv: a header line (samples, features, class names), then
    # 30 features and the class (0 malignant, 1 benign) per line
    r = rows(os.path.join(src, "breast_cancer.csv"))[1:]
    X = np.array([[float(v) for v in x[:30]] for x in r], dtype=np.float64)
    y = np.array([int(x[30]) for x in r], dtype=np.int64)
    p = np.random.default_rng(0).permutation(len(y))
    np.save(os.path.join(out, "breast_cancer_X.npy"), X[p])
    np.save(os.path.join(out, "breast_cancer_y.npy"), y[p])
    # digits.csv.gz: 64 pixel values (0..16) and the digit per line
    r = rows(os.path.join(src, "digits.csv.gz"))
    X = np.array([[float(v) for v in x[:64]] for x in r], dtype=np.float64)
    y = np.array([int(float(x[64])) for x in r], dtype=np.int64)
    p = np.random.default_rng(1).permutation(len(y))
    np.save(os.path.join(out, "digits_X.npy"), X[p])
    np.save(os.path.join(out, "digits_y.npy"), y[p])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/python3/dist-packages/sklearn/datasets/data")
