"""Solves one mixed-integer linear program with HiGHS (highspy) for the Go test
policy/search_milp_test.go: reads the problem as JSON from argv[1] and writes the answer
as JSON to argv[2] (HiGHS prints its banner on stdout).

problem: {"sense": "max"|"min",
          "cols": [[cost, lower, upper, integer], ...],
          "rows": [[lower, upper, [col, ...], [coef, ...]], ...]}   (null bound = infinite)
answer:  {"status": "Optimal"|..., "objective": float, "x": [float, ...]}
"""
import json
import sys

import highspy


def main():
    with open(sys.argv[1]) as f:
        p = json.load(f)
    inf = highspy.kHighsInf
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "off")  # its probing takes minutes on these set-partitioning programs
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-12)
    for cost, lo, hi, integer in p["cols"]:
        h.addCol(float(cost), -inf if lo is None else float(lo), inf if hi is None else float(hi), 0, [], [])
    ints = [j for j, c in enumerate(p["cols"]) if c[3]]
    if ints:
        h.changeColsIntegrality(len(ints), ints, [highspy.HighsVarType.kInteger] * len(ints))
    for lo, hi, idx, val in p["rows"]:
        h.addRow(-inf if lo is None else float(lo), inf if hi is None else float(hi), len(idx), idx, val)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize if p["sense"] == "max" else highspy.ObjSense.kMinimize)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    out = {"status": status, "objective": None, "x": []}
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        out["objective"] = h.getInfo().objective_function_value
        out["x"] = list(h.getSolution().col_value)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
