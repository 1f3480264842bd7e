/* Highlight the searched words on the page a search result leads to.
   Sphinx's sphinx_highlight.js does this only on pages without searchtools.js (it takes a page with it for
   the search page itself), but pydata-sphinx-theme loads searchtools.js on every page for its search box,
   so no page highlighted anything. Here: on every page except the search page, once the page is ready. */
document.addEventListener("DOMContentLoaded", function () {
  var page = typeof DOCUMENTATION_OPTIONS !== "undefined" && DOCUMENTATION_OPTIONS.pagename;
  if (typeof SphinxHighlight !== "undefined" && page !== "search" && !document.getElementById("search-results")) {
    SphinxHighlight.highlightSearchWords();
  }
});
