"""Drives the service through the Python client swagger-codegen generates from the document.

Run by test/openapi-python-client.e2e-spec.ts with the generated package on PYTHONPATH:
    python3 check_client.py <base-url> <user-id>
with PUBLISH_TOKEN in the environment, and SEARCH_TOKEN for the search (a client generated
from the first release, 0.1.0, has none: without SEARCH_TOKEN that step is left out). Prints
one JSON line per step, which the test compares exactly.
"""
import datetime
import json
import os
import re
import sys
import urllib.parse

from name_history_client import ApiClient, Configuration
from name_history_client.api.events_api import EventsApi
from name_history_client.api.history_api import HistoryApi
from name_history_client.models.name_change_event_dto import NameChangeEventDto
from name_history_client.rest import ApiException

base_url, user_id = sys.argv[1], sys.argv[2]


def client(token=None):
    configuration = Configuration()
    configuration.host = base_url
    api_client = ApiClient(configuration)
    # swagger-codegen 3.0.34 drops the document's http bearer schemes: auth_settings() is
    # empty, so configuration.access_token is never sent. The header is set on the client.
    if token is not None:
        api_client.set_default_header("Authorization", "Bearer " + token)
    return api_client


def show(step, value):
    def plain(value):
        if isinstance(value, datetime.datetime):
            return value.isoformat()
        raise TypeError(repr(value))

    line = {"step": step, "value": value}
    print(json.dumps(line, ensure_ascii=False, sort_keys=True, default=plain), flush=True)


def failure(call):
    """The {message, code} of the ApiException a call raises, with its status."""
    try:
        call()
    except ApiException as error:
        return {"status": error.status, "body": json.loads(error.body)}
    raise AssertionError("the call did not fail")


def next_cursor(headers):
    link = headers.get("Link")
    if link is None:
        return None
    match = re.search(r'<[^>]*[?&]cursor=([^&>]+)[^>]*>;\s*rel="next"', link)
    return match and urllib.parse.unquote(match.group(1))


publisher = EventsApi(client(os.environ["PUBLISH_TOKEN"]))
names = ["first", "second", "third"]
for i, name in enumerate(names):
    event = NameChangeEventDto(
        user_id=user_id,
        type="username",
        name=name,
        changed_at="2024-06-0%dT15:30:00+02:00" % (i + 1),
    )
    show("publish", publisher.publish_name_change(event).to_dict())

if "SEARCH_TOKEN" in os.environ:
    from name_history_client.api.search_api import SearchApi

    searcher = SearchApi(client(os.environ["SEARCH_TOKEN"]))
    found = searcher.search_previous_names("SECOND", type="username")
    show("search", [m.to_dict() for m in found.matches if m.user_id == user_id])
    show("search 401", failure(lambda: SearchApi(client()).search_previous_names("second")))

history = HistoryApi(client())
pages, cursor = [], None
while len(pages) < 10:  # a Link that never ends fails the comparison, not the time limit
    kwargs = {"limit": 2} if cursor is None else {"limit": 2, "cursor": cursor}
    page, status, headers = history.get_name_history_with_http_info(user_id, **kwargs)
    pages.append([[entry.type, entry.name, entry.changed_at] for entry in page.prevnames])
    cursor = next_cursor(headers)
    if cursor is None:
        break
show("history pages", pages)

show("400", failure(lambda: history.get_name_history(user_id, limit=2, cursor="forged")))
show("401", failure(lambda: EventsApi(client("wrong")).publish_name_change(
    NameChangeEventDto(user_id=user_id, type="username", name="x", changed_at="2024-06-07T15:30:00Z"))))
