// On a phone or a tablet the chapter list and the page's contents open as drawers (modal <dialog>s
// of pydata-sphinx-theme). Following a link in one leaves the drawer open over the page, so a
// section link scrolls the page behind it and the reader sees no change. Close the drawer first:
// the theme's own "close" handler puts the panel back in its place, and the link is followed.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("dialog[open] a[href]");
  if (link) link.closest("dialog").close();
});

// Bootstrap's scroll spy, which marks in the page's contents the section being read, starts one frame after
// the load event, when the page is laid out and its measures cost little: started by the theme at the load
// event itself, its first measure laid the page out (_templates/layout.html leaves the theme's data-bs-spy
// out for that; the body keeps its data-bs-target and data-bs-root-margin, which Bootstrap reads).
// (Looked for at the load event: the 404 page runs this script before its <body> exists.)
addEventListener("load", () => {
  if (document.body.dataset.attnSpy !== "scroll") return;
  requestAnimationFrame(() => setTimeout(() => {
    if (window.bootstrap) window.bootstrap.ScrollSpy.getOrCreateInstance(document.body);
  }));
});
