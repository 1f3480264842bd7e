// On a phone or a tablet the chapter list and the page's contents open as drawers (modal <dialog>s
// of pydata-sphinx-theme). Following a link in one leaves the drawer open over the page, so a
// section link scrolls the page behind it and the reader sees no change. Close the drawer first:
// the theme's own "close" handler puts the panel back in its place, and the link is followed.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("dialog[open] a[href]");
  if (link) link.closest("dialog").close();
});
