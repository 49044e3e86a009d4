# The trend gate and the report page.
#
#   make report         results/report/index.html (charts, the gate's table, the engine
#                       comparison, the MR-budget curve, per-stage latency) and
#                       results/report/summary.md, from results/*.csv; open index.html
#                       in a browser, no server needed
#   make test-regress   ci/regress on synthetic series (part of test-more)
#   make test-report    the page built from results/*.csv, opened in headless Chromium
#                       (part of test-more; screenshot in build/report.png)
#   make test-workflows .github/workflows/*.yml well formed (yamllint), every script and
#                       make target they call present (part of test-more)

.PHONY: report test-regress test-report deps-report test-workflows
report:
	ci/deps.sh charts
	ci/report

test-more: test-regress test-report test-workflows
test-regress:
	ci/deps.sh regress
	ci/test-regress

deps-report:
	ci/deps.sh charts browser

test-report: deps-report
	@mkdir -p build
	ci/test-report

test-workflows:
	ci/deps.sh workflows
	ci/test-workflows
