"""The theme's words in the edition's language (issue 35: the Chinese edition "to the last label").
Loaded by attn_book.setup; used by the Chinese edition only (the English one sets none of what follows,
so its pages are left as the themes write them).

The words are one table, ``theme`` in i18n/zh/strings.yml, keyed by the English, applied three ways:

1. Messages the themes look up through gettext (Sphinx's own writer and templates, pydata-sphinx-theme's
   templates: domain ``sphinx``; sphinx-book-theme's buttons and templates: ``booktheme``):
   ``python -m scripts.zh build`` writes each domain's table as a message catalogue,
   ``zh/locale/zh_CN/LC_MESSAGES/<domain>.po``, found through the Chinese configuration's ``locale_dirs``.
   Sphinx compiles the ``sphinx`` one itself and puts it before its own and the theme's catalogues; the
   others Sphinx leaves to the extension that registered the domain, so ``install_catalogues`` compiles
   them the same way (Sphinx's ``CatalogRepository``, a ``.mo`` file only where the ``.po`` is newer: no
   compiled catalogue is committed) and puts each before the theme's own. A message the table does not
   name keeps the theme's translation.
2. English written into the themes' templates, not looked up (sphinx-book-theme's sidebar toggles and
   navigation names, Jupyter Book's search placeholder): ``attn_theme_words`` in the configuration, a
   table of attribute values (``title``, ``aria-label``, ``placeholder``, ``alt``, ``data-bs-title``)
   replaced where the whole value is the English one, in the written pages (``translate_attributes``,
   applied in attn_a11y's pass over the pages: one read and write per page).
3. Configuration values the extensions give in English (the 404 page, sphinx-togglebutton's hints):
   set in zh/_config.yml by ``scripts.zh config``.
"""

from __future__ import annotations

import gettext
import re
from html import escape, unescape

ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title")
_ATTRIBUTE = re.compile(r'(\s(?:' + "|".join(map(re.escape, ATTRIBUTES)) + r')=")([^"]*)(")')


def translate_attributes(html: str, words: dict[str, str] | None) -> str:
    """``html`` with each listed attribute whose whole value is a key of ``words`` given that entry."""
    if not words:
        return html

    def one(m: re.Match) -> str:
        new = words.get(unescape(m.group(2)))
        return m.group(0) if new is None else m.group(1) + escape(new) + m.group(3)

    return _ATTRIBUTE.sub(one, html)


def install_catalogues(app) -> None:
    """Compile the project's catalogues of the domains other than ``sphinx`` (see 1. above) and put each
    before the catalogue its theme registered."""
    from sphinx import locale
    from sphinx.util.i18n import CatalogRepository

    language = app.config.language
    if not language or language == "en" or not app.config.locale_dirs:
        return
    repo = CatalogRepository(app.srcdir, app.config.locale_dirs, language, app.config.source_encoding)
    domains = set()
    for catalog in repo.catalogs:
        if catalog.domain == "sphinx" or "/" in catalog.domain:
            continue  # Sphinx's own (compiled by Sphinx), or a document's
        if catalog.is_outdated():
            catalog.write_mo(language, app.config.gettext_allow_fuzzy_translations)
        domains.add(catalog.domain)
    for domain in sorted(domains):
        ours = None
        for folder in repo.locale_dirs:
            try:
                found = gettext.translation(domain, localedir=folder, languages=[language])
            except OSError:
                continue
            ours = found if ours is None else (ours.add_fallback(found) or ours)
        theirs = locale.translators.get(("general", domain))
        if theirs is not None:
            ours.add_fallback(theirs)
        locale.translators["general", domain] = ours

def setup(app):
    app.add_config_value("attn_theme_words", None, "html")  # see 2. above
    app.connect("builder-inited", install_catalogues)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
