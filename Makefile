# make test   install what the tests need, build the native stack, run pytest
# make build  only build the native stack's Go binaries (cached outside the repo)

.PHONY: test deps build

test: deps build
	python3 -m pytest -q tests

deps:
	./native/install-deps.sh

build:
	./native/build.sh >/dev/null
