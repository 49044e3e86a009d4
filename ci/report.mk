# The trend gate and the report page.
#
#   make report         results/report/index.html (charts, the gate's table, the engine
#                       comparison, the MR-budget curve, per-stage latency) and
#                       results/report/summary.md, from results/*.csv
#   make test-regress   ci/regress on synthetic series (part of test-more)

.PHONY: test-regress
test-more: test-regress
test-regress:
	ci/test-regress
