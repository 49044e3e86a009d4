# The Ansible playbooks of playbooks/ (host setup, backend, NVMe/TCP sweep). See playbooks/README.md.
#
#   make test-playbooks   install ansible-core and ansible-lint, syntax-check every playbook against
#                         the example inventory, ansible-lint playbooks/, then playbooks/tests/run.sh:
#                         host-setup.yml and backend.yml for real on localhost into a temporary prefix
#                         (no systemd), the device lookup and the queue_count check (part of test-more)

PLAYBOOKS := $(wildcard playbooks/*.yml)

.PHONY: test-playbooks
test-more: test-playbooks
test-playbooks:
	ci/deps.sh playbooks
	ANSIBLE_NOCOLOR=1 ANSIBLE_ROLES_PATH=playbooks/roles ansible-playbook --syntax-check \
		-i playbooks/inventory.example.yml $(filter-out playbooks/inventory.example.yml,$(PLAYBOOKS)) \
		playbooks/tests/logic.yml
	NO_COLOR=1 ansible-lint -q -c playbooks/.ansible-lint playbooks/
	playbooks/tests/run.sh
