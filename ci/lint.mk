# The shell scripts' lint: shellcheck over every tracked shell script (ci/test-shellcheck), in make test.
#
#   make test-shellcheck    warnings and errors fail it; a sourced file says what its variables are for

.PHONY: test-shellcheck
test-more: test-shellcheck
test-shellcheck:
	ci/deps.sh lint
	ci/test-shellcheck
